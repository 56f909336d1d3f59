package sandbox

import (
	"bytes"
	"encoding/json"
	"maps"
	"slices"
	"strconv"

	"pluginhost/models"
)

// encodeRequest writes the request as json.Marshal does, byte for byte, on
// the condition the storage keeps: each item's value is compact JSON. It
// writes the snapshot's values as they are, HTML-escaped, instead of having
// encoding/json check and compact each again, which cost more than the rest
// of the request together (and grows with the snapshot).
func encodeRequest(r *Request) ([]byte, error) {
	size := 256 + len(r.Arguments) + len(r.Carry)
	if r.PluginStorage != nil {
		for ns, items := range r.PluginStorage.Namespaces {
			size += len(ns) + 4
			for _, it := range items {
				size += len(it.Key) + len(it.Value) + 48
			}
		}
	}
	b := make([]byte, 0, size)
	b = append(b, `{"capability":`...)
	b = models.AppendJSONString(b, r.Capability)
	b = append(b, `,"kind":`...)
	b = models.AppendJSONString(b, r.Kind)
	b = append(b, `,"trigger":`...)
	b = models.AppendJSONString(b, r.Trigger)
	b = append(b, `,"arguments":`...)
	b, err := appendRaw(b, r.Arguments)
	if err != nil {
		return nil, err
	}
	b = append(b, `,"query":`...)
	if r.Query == nil {
		b = append(b, "null"...)
	} else {
		b = models.AppendJSONString(b, *r.Query)
	}
	b = append(b, `,"instance":{"id":`...)
	b = models.AppendJSONString(b, r.Instance.ID)
	b = append(b, `,"installation_id":`...)
	b = models.AppendJSONString(b, r.Instance.InstallationID)
	b = append(b, `,"generation":`...)
	b = strconv.AppendInt(b, r.Instance.Generation, 10)
	b = append(b, '}')
	if s := r.PluginStorage; s != nil {
		b = append(b, `,"plugin_storage":{"storage_revision":`...)
		b = strconv.AppendInt(b, s.StorageRevision, 10)
		b = append(b, `,"namespaces":`...)
		if s.Namespaces == nil {
			b = append(b, "null"...)
		} else {
			b = append(b, '{')
			for i, ns := range slices.Sorted(maps.Keys(s.Namespaces)) {
				if i > 0 {
					b = append(b, ',')
				}
				b = models.AppendJSONString(b, ns)
				b = append(b, ':')
				b = appendItems(b, s.Namespaces[ns])
			}
			b = append(b, '}')
		}
		b = append(b, '}')
	}
	if r.Round != 0 {
		b = append(b, `,"round":`...)
		b = strconv.AppendInt(b, int64(r.Round), 10)
	}
	if len(r.Fetched) > 0 {
		fetched, err := json.Marshal(r.Fetched)
		if err != nil {
			return nil, err
		}
		b = append(b, `,"fetched":`...)
		b = append(b, fetched...)
	}
	if len(r.Carry) > 0 {
		b = append(b, `,"carry":`...)
		if b, err = appendRaw(b, r.Carry); err != nil {
			return nil, err
		}
	}
	return append(b, '}'), nil
}

func appendItems(b []byte, items []Item) []byte {
	if items == nil {
		return append(b, "null"...)
	}
	b = append(b, '[')
	for i, it := range items {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"key":`...)
		b = models.AppendJSONString(b, it.Key)
		b = append(b, `,"value":`...)
		if len(it.Value) == 0 {
			b = append(b, "null"...)
		} else {
			buf := bytes.NewBuffer(b)
			json.HTMLEscape(buf, it.Value)
			b = buf.Bytes()
		}
		b = append(b, `,"revision":`...)
		b = strconv.AppendInt(b, it.Revision, 10)
		b = append(b, '}')
	}
	return append(b, ']')
}

// appendRaw appends a JSON value as json.Marshal writes a json.RawMessage:
// null when empty, otherwise checked, compacted and HTML-escaped.
func appendRaw(b []byte, raw json.RawMessage) ([]byte, error) {
	if len(raw) == 0 {
		return append(b, "null"...), nil
	}
	out, err := json.Marshal(raw)
	if err != nil {
		return nil, err
	}
	return append(b, out...), nil
}
