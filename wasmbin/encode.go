package wasmbin

// writer appends the binary format.
type writer struct{ b []byte }

func (w *writer) byte(c byte)       { w.b = append(w.b, c) }
func (w *writer) raw(b []byte)      { w.b = append(w.b, b...) }
func (w *writer) u32(v uint32)      { w.uleb(uint64(v)) }
func (w *writer) name(s string)     { w.u32(uint32(len(s))); w.raw([]byte(s)) }
func (w *writer) vecLen(n int)      { w.u32(uint32(n)) }
func (w *writer) valType(t ValType) { w.byte(byte(t)) }

func (w *writer) uleb(v uint64) {
	for {
		c := byte(v & 0x7f)
		v >>= 7
		if v != 0 {
			c |= 0x80
		}
		w.b = append(w.b, c)
		if v == 0 {
			return
		}
	}
}

func (w *writer) sleb(v int64) {
	for {
		c := byte(v & 0x7f)
		v >>= 7
		done := v == 0 && c&0x40 == 0 || v == -1 && c&0x40 != 0
		if !done {
			c |= 0x80
		}
		w.b = append(w.b, c)
		if done {
			return
		}
	}
}

func (w *writer) resizable(l Resizable) {
	if l.HasMax {
		w.byte(1)
		w.uleb(l.Min)
		w.uleb(l.Max)
		return
	}
	w.byte(0)
	w.uleb(l.Min)
}

func (w *writer) section(id byte, body []byte) {
	w.byte(id)
	w.u32(uint32(len(body)))
	w.raw(body)
}

// Encode writes the module in the binary format.
func (m *Module) Encode() []byte {
	type section struct {
		id   byte
		body []byte
	}
	var sections []section
	customs := func(after byte) {
		for _, c := range m.customs {
			if c.after == after {
				sections = append(sections, section{secCustom, c.body})
			}
		}
	}
	customs(0)
	for _, id := range sectionOrder {
		if body, ok := m.sectionBody(id); ok {
			sections = append(sections, section{id, body})
		}
		customs(id)
	}
	size := 8
	for _, s := range sections {
		size += 1 + 5 + len(s.body)
	}
	w := &writer{b: make([]byte, 0, size)}
	w.raw([]byte("\x00asm\x01\x00\x00\x00"))
	for _, s := range sections {
		w.section(s.id, s.body)
	}
	return w.b
}

// sectionBody encodes one section; ok is false when the module has none.
func (m *Module) sectionBody(id byte) (body []byte, ok bool) {
	s := &writer{b: make([]byte, 0, m.sectionSize(id))}
	switch id {
	case secType:
		if len(m.Types) == 0 {
			return nil, false
		}
		s.vecLen(len(m.Types))
		for _, t := range m.Types {
			s.byte(0x60)
			s.vecLen(len(t.Params))
			for _, p := range t.Params {
				s.valType(p)
			}
			s.vecLen(len(t.Results))
			for _, r := range t.Results {
				s.valType(r)
			}
		}
	case secImport:
		if len(m.Imports) == 0 {
			return nil, false
		}
		s.vecLen(len(m.Imports))
		for _, im := range m.Imports {
			s.name(im.Module)
			s.name(im.Name)
			s.byte(im.Kind)
			s.u32(im.Type) // only function imports are kept (Check)
		}
	case secFunction:
		if len(m.Funcs) == 0 {
			return nil, false
		}
		s.vecLen(len(m.Funcs))
		for _, f := range m.Funcs {
			s.u32(f)
		}
	case secTable:
		if len(m.Tables) == 0 {
			return nil, false
		}
		s.vecLen(len(m.Tables))
		for _, t := range m.Tables {
			s.valType(t.Elem)
			s.resizable(t.Size)
		}
	case secMemory:
		if len(m.Memories) == 0 {
			return nil, false
		}
		s.vecLen(len(m.Memories))
		for _, l := range m.Memories {
			s.resizable(l)
		}
	case secGlobal:
		if len(m.Globals) == 0 {
			return nil, false
		}
		s.vecLen(len(m.Globals))
		for _, g := range m.Globals {
			s.valType(g.Type)
			if g.Mutable {
				s.byte(1)
			} else {
				s.byte(0)
			}
			s.raw(g.Init)
		}
	case secExport:
		if len(m.Exports) == 0 {
			return nil, false
		}
		s.vecLen(len(m.Exports))
		for _, e := range m.Exports {
			s.name(e.Name)
			s.byte(e.Kind)
			s.u32(e.Index)
		}
	case secStart:
		if m.Start == nil {
			return nil, false
		}
		s.u32(*m.Start)
	case secElement:
		if !m.HasElements {
			return nil, false
		}
		s.vecLen(len(m.Elements))
		for _, el := range m.Elements {
			s.u32(el.Flags)
			if el.Flags == 2 || el.Flags == 6 {
				s.u32(el.Table)
			}
			if el.Flags&1 == 0 {
				s.raw(el.Offset)
			}
			if el.Flags == 1 || el.Flags == 2 || el.Flags == 3 || el.Flags >= 5 {
				s.byte(el.Type)
			}
			if el.Flags&4 == 0 {
				s.vecLen(len(el.Funcs))
				for _, f := range el.Funcs {
					s.u32(f)
				}
			} else {
				s.vecLen(len(el.Exprs))
				for _, e := range el.Exprs {
					s.raw(e)
				}
			}
		}
	case secDataCount:
		if m.DataCount == nil {
			return nil, false
		}
		s.u32(uint32(len(m.Data)))
	case secCode:
		if len(m.Code) == 0 {
			return nil, false
		}
		s.vecLen(len(m.Code))
		f := &writer{}
		for _, b := range m.Code {
			f.b = f.b[:0]
			f.vecLen(len(b.Locals))
			for _, l := range b.Locals {
				f.u32(l.Count)
				f.valType(l.Type)
			}
			f.raw(b.Code)
			s.u32(uint32(len(f.b)))
			s.raw(f.b)
		}
	case secData:
		if len(m.Data) == 0 {
			return nil, false
		}
		s.vecLen(len(m.Data))
		for _, d := range m.Data {
			switch {
			case d.Passive:
				s.byte(1)
			case d.Memory == 0:
				s.byte(0)
				s.raw(d.Offset)
			default:
				s.byte(2)
				s.u32(d.Memory)
				s.raw(d.Offset)
			}
			s.vecLen(len(d.Init))
			s.raw(d.Init)
		}
	default:
		return nil, false
	}
	return s.b, true
}

// sectionSize is about the size of a section's body, for the room its
// encoding takes at once: the code and the data, a module's megabytes, are
// not copied as they grow.
func (m *Module) sectionSize(id byte) int {
	n := 16
	switch id {
	case secCode:
		for _, b := range m.Code {
			n += 10 + 6*len(b.Locals) + len(b.Code)
		}
	case secData:
		for _, d := range m.Data {
			n += 11 + len(d.Offset) + len(d.Init)
		}
	}
	return n
}
