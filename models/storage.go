package models

import "time"

// TimeLayout is ISO 8601 with microseconds and an explicit offset.
const TimeLayout = "2006-01-02T15:04:05.000000-07:00"

// Tool names of the standard storage tools.
const (
	ToolList   = "host.storage.list"
	ToolGet    = "host.storage.get"
	ToolCreate = "host.storage.create"
	ToolUpdate = "host.storage.update"
	ToolDelete = "host.storage.delete"
)

// StorageTools lists the standard storage tools in a fixed order.
var StorageTools = []string{ToolList, ToolGet, ToolCreate, ToolUpdate, ToolDelete}

// IsMutatingTool reports whether the tool changes storage.
func IsMutatingTool(tool string) bool {
	return tool == ToolCreate || tool == ToolUpdate || tool == ToolDelete
}

// StorageItem is one key of one namespace of one Instance.
type StorageItem struct {
	Key       string
	Value     JSON
	Revision  int64
	CreatedAt time.Time
	UpdatedAt time.Time
}

// ItemJSON is the wire form of a storage item inside ExtensionResult.data.
type ItemJSON struct {
	Key       string `json:"key"`
	Value     JSON   `json:"value"`
	Revision  int64  `json:"revision"`
	CreatedAt string `json:"created_at"`
	UpdatedAt string `json:"updated_at"`
}

// Wire returns the item's wire form.
func (it StorageItem) Wire() ItemJSON {
	return ItemJSON{
		Key:       it.Key,
		Value:     it.Value,
		Revision:  it.Revision,
		CreatedAt: FormatTime(it.CreatedAt),
		UpdatedAt: FormatTime(it.UpdatedAt),
	}
}

// FormatTime formats t in UTC with TimeLayout.
func FormatTime(t time.Time) string { return string(AppendTime(make([]byte, 0, len(TimeLayout)), t)) }

// AppendTime appends t as FormatTime writes it. Every item a storage
// operation answers carries two times, so the layout is written digit by
// digit rather than interpreted: in less than half the time.
func AppendTime(b []byte, t time.Time) []byte {
	t = t.UTC()
	year, month, day := t.Date()
	if year < 0 || year > 9999 {
		return t.AppendFormat(b, TimeLayout)
	}
	hour, minute, second := t.Clock()
	b = appendDigits(b, year, 4)
	b = appendDigits(append(b, '-'), int(month), 2)
	b = appendDigits(append(b, '-'), day, 2)
	b = appendDigits(append(b, 'T'), hour, 2)
	b = appendDigits(append(b, ':'), minute, 2)
	b = appendDigits(append(b, ':'), second, 2)
	b = appendDigits(append(b, '.'), t.Nanosecond()/1000, 6)
	return append(b, "+00:00"...)
}

// appendDigits appends the n lowest decimal digits of v, which is not
// negative.
func appendDigits(b []byte, v, n int) []byte {
	start := len(b)
	for range n {
		b = append(b, '0')
	}
	for i := len(b) - 1; i >= start; i-- {
		b[i] = byte('0' + v%10)
		v /= 10
	}
	return b
}

// ItemData is ExtensionResult.data of a single-item tool.
type ItemData struct {
	Namespace string   `json:"namespace"`
	Item      ItemJSON `json:"item"`
}

// ListData is ExtensionResult.data of host.storage.list. NextCursor continues
// the listing after the last returned item when HasMore is true.
type ListData struct {
	Namespace  string     `json:"namespace"`
	Items      []ItemJSON `json:"items"`
	HasMore    bool       `json:"has_more"`
	NextCursor string     `json:"next_cursor,omitempty"`
}

// Evidence names a storage item that a result rests on, at a revision.
type Evidence struct {
	Type       string `json:"type"`
	InstanceID string `json:"instance_id"`
	Namespace  string `json:"namespace"`
	Key        string `json:"key"`
	Revision   int64  `json:"revision"`
}

// EvidenceTypeStorage is the evidence type of storage items.
const EvidenceTypeStorage = "plugin_storage"

// ExtensionResult is the common result of every tool.
type ExtensionResult struct {
	Summary  string     `json:"summary"`
	Data     JSON       `json:"data"`
	Evidence []Evidence `json:"evidence"`
}

// Change operations of StorageChange.
const (
	OpCreate   = "create"
	OpUpdate   = "update"
	OpDelete   = "delete"
	OpReset    = "reset"
	OpMigrate  = "migrate"
	OpSnapshot = "snapshot"
	// OpAccess is internal: who may watch an Instance changed (disabled,
	// uninstalled). It is never delivered; watchers check their access again.
	OpAccess = "access"
	// OpNotification is internal: a notification for the user was kept
	// (Key holds its id); published on the user's notification topic.
	OpNotification = "notification"
	// OpResponse is internal: a response UI was rendered in one of the
	// user's AI messages (Key holds the message id); published on the user's
	// response topic.
	OpResponse = "response"
)

// StorageChange is a committed change of one Instance's storage. StorageRevision
// is the Instance's counter after the change.
type StorageChange struct {
	InstanceID      string  `json:"instance_id"`
	UserID          string  `json:"user_id"`
	InstallationID  string  `json:"installation_id"`
	StorageRevision int64   `json:"storage_revision"`
	Namespace       string  `json:"namespace"`
	Key             *string `json:"key,omitempty"`
	Operation       string  `json:"operation"`
	ItemRevision    *int64  `json:"item_revision,omitempty"`
	// Generation is the package generation of the Instance's Installation;
	// 0 when the publisher did not know it (subscribers fill it in).
	Generation int64 `json:"generation,omitempty"`
	// Message is why the author's latest change was not installed, for an
	// OpDevelopment change only.
	Message *string `json:"message,omitempty"`
}
