// Package wasmbin reads, checks and rewrites WebAssembly modules in the binary
// format (version 1), without running them. It is what the host knows of a
// capability module before any engine sees it: the structural limits that
// bound what compiling and running it can cost (Check), the instrumentation
// that bounds its call stack and lets a run's state be saved and restored
// (Instrument), and the rewrite that turns an initialized instance into a
// module that starts initialized (Preinitialize).
//
// It depends on nothing but the standard library, so that the validator can
// check modules without linking an engine.
package wasmbin

import (
	"errors"
	"fmt"
)

// ValType is a value type.
type ValType byte

// Value types.
const (
	I32       ValType = 0x7f
	I64       ValType = 0x7e
	F32       ValType = 0x7d
	F64       ValType = 0x7c
	V128      ValType = 0x7b
	FuncRef   ValType = 0x70
	ExternRef ValType = 0x6f
)

func (t ValType) valid() bool {
	switch t {
	case I32, I64, F32, F64, V128, FuncRef, ExternRef:
		return true
	}
	return false
}

// FuncType is a function signature.
type FuncType struct {
	Params, Results []ValType
}

// Extern kinds of imports and exports.
const (
	ExternFunc   byte = 0
	ExternTable  byte = 1
	ExternMemory byte = 2
	ExternGlobal byte = 3
	ExternTag    byte = 4
)

// Import is one import. Only function imports are kept in detail: the host
// provides nothing else (WASI preview 1 exports functions only).
type Import struct {
	Module, Name string
	Kind         byte
	Type         uint32 // of a function import
}

// Resizable is the limits of a memory (in pages) or a table (in elements).
type Resizable struct {
	Min, Max uint64
	HasMax   bool
}

// Table is a table's element type and size.
type Table struct {
	Elem ValType
	Size Resizable
}

// Global is a global defined by the module, with its constant initializer
// expression (ending with its end opcode).
type Global struct {
	Type    ValType
	Mutable bool
	Init    []byte
}

// Export is one export.
type Export struct {
	Name  string
	Kind  byte
	Index uint32
}

// Local is a run of locals of one type in a function body.
type Local struct {
	Count uint32
	Type  ValType
}

// Body is a defined function's code: its locals and its instructions, the
// last of which is the function's end.
type Body struct {
	Locals []Local
	Code   []byte
	// off is where Code starts in the module, for messages.
	off int
}

// Data is a data segment. An active segment (Passive false) is written into
// memory Memory at the offset its constant expression gives.
type Data struct {
	Passive bool
	Memory  uint32
	Offset  []byte // constant expression, with its end opcode
	Init    []byte
}

// Element is an element segment: its mode, the table and offset of an
// active one, and its items, as function indices (Funcs) or as constant
// expressions (Exprs, each ending with its end opcode), as the binary format
// has them (Flags 0 to 7).
type Element struct {
	Flags  uint32
	Table  uint32
	Offset []byte
	// Type is the element kind byte (0: funcref) of flags 1 to 3, or the
	// reference type of flags 5 to 7.
	Type  byte
	Funcs []uint32
	Exprs [][]byte
}

// custom is a custom section, kept as is, with the id of the section it
// followed (0 when it came first), so that Encode keeps it in place.
type custom struct {
	after byte
	body  []byte
}

// Module is a decoded module. Encode writes it back; sections Module does not
// rewrite (element segments, custom sections) keep their bytes.
type Module struct {
	Types    []FuncType
	Imports  []Import
	Funcs    []uint32 // the type index of each defined function
	Tables   []Table
	Memories []Resizable
	Globals  []Global
	Exports  []Export
	Start    *uint32
	// DataCount is the data count section's value, when present.
	DataCount *uint32
	Code      []Body
	Data      []Data

	stats []FuncStats // of each defined function, once Check has run

	// Elements are the element segments; HasElements says whether the
	// module has an element section (it may be empty).
	Elements    []Element
	HasElements bool

	customs []custom

	importedFuncs, importedTables, importedMemories, importedGlobals int
}

// Section ids, in the order the binary format requires (tag, 13, comes after
// memory, 5; data count, 12, before code, 10).
const (
	secCustom    = 0
	secType      = 1
	secImport    = 2
	secFunction  = 3
	secTable     = 4
	secMemory    = 5
	secGlobal    = 6
	secExport    = 7
	secStart     = 8
	secElement   = 9
	secCode      = 10
	secData      = 11
	secDataCount = 12
	secTag       = 13
)

var sectionOrder = []byte{secType, secImport, secFunction, secTable, secMemory, secTag, secGlobal,
	secExport, secStart, secElement, secDataCount, secCode, secData}

func orderOf(id byte) int {
	for i, s := range sectionOrder {
		if s == id {
			return i
		}
	}
	return -1
}

// Error is a module that is not well formed, at a byte offset.
type Error struct {
	Offset int
	Err    error
}

func (e *Error) Error() string {
	return fmt.Sprintf("not a valid WebAssembly module: at byte %d: %v", e.Offset, e.Err)
}

func (e *Error) Unwrap() error { return e.Err }

// LimitError is a module beyond one of the host's structural limits.
type LimitError struct {
	// Limit names the limit, as Limits documents it.
	Limit string
	Max   int64
	Got   int64
	// Where names the function, table or segment, when the limit is per item.
	Where string
}

func (e *LimitError) Error() string {
	where := ""
	if e.Where != "" {
		where = e.Where + ": "
	}
	return fmt.Sprintf("%s%s is %d; the host's limit is %d", where, e.Limit, e.Got, e.Max)
}

// Parse decodes a module, applying the limits while it reads, so that a
// module cannot make the decoder itself allocate beyond them. It checks the
// binary format's structure and the host's limits, not the code's types:
// the engine validates those when it compiles.
func Parse(wasm []byte, lim Limits) (*Module, error) {
	lim = lim.withDefaults()
	if len(wasm) < 8 || string(wasm[:4]) != "\x00asm" {
		return nil, errors.New("not a WebAssembly module: it does not start with \\0asm")
	}
	if string(wasm[4:8]) != "\x01\x00\x00\x00" {
		return nil, errors.New("not a WebAssembly module of binary format version 1")
	}
	m := &Module{}
	r := &reader{b: wasm[8:], off: 8}
	last := -1
	var lastID byte
	funcsDeclared := -1
	for !r.done() {
		id := r.byte()
		size := r.u32()
		start := r.off
		body := r.bytes(uint64(size))
		if r.err != nil {
			return nil, &Error{start, fmt.Errorf("section %d: %v", id, r.err)}
		}
		s := &reader{b: body, off: start}
		if id == secCustom {
			s.name()
			if s.err != nil {
				return nil, &Error{s.off, fmt.Errorf("custom section: %v", s.err)}
			}
			m.customs = append(m.customs, custom{after: lastID, body: body})
			continue
		}
		o := orderOf(id)
		if o < 0 {
			return nil, &Error{start, fmt.Errorf("unknown section id %d", id)}
		}
		if o <= last {
			return nil, &Error{start, fmt.Errorf("section %d is out of order or repeated", id)}
		}
		last, lastID = o, id
		switch id {
		case secType:
			m.readTypes(s, lim)
		case secImport:
			m.readImports(s, lim)
		case secFunction:
			n := s.count("functions", lim.MaxFunctions, 1)
			m.Funcs = make([]uint32, n)
			for i := range m.Funcs {
				m.Funcs[i] = s.u32()
			}
			funcsDeclared = n
		case secTable:
			n := s.count("tables", lim.MaxTables, 3)
			for range n {
				m.Tables = append(m.Tables, Table{Elem: s.refType(), Size: s.resizable(32)})
			}
		case secMemory:
			n := s.count("memories", 1, 2)
			for range n {
				m.Memories = append(m.Memories, s.resizable(32))
			}
		case secTag:
			s.fail(errors.New("the exception handling proposal (tags) is not supported"))
		case secGlobal:
			n := s.count("globals", lim.MaxGlobals, 3)
			m.Globals = make([]Global, n)
			for i := range m.Globals {
				g := &m.Globals[i]
				g.Type = s.valType()
				switch mut := s.byte(); mut {
				case 0, 1:
					g.Mutable = mut == 1
				default:
					s.failf("global %d: mutability 0x%02x", i, mut)
				}
				g.Init = constExpr(s)
			}
		case secExport:
			n := s.count("exports", lim.MaxExports, 3)
			m.Exports = make([]Export, n)
			for i := range m.Exports {
				m.Exports[i] = Export{Name: s.name(), Kind: s.byte(), Index: s.u32()}
				if k := m.Exports[i].Kind; s.err == nil && k > ExternGlobal {
					s.failf("export %q of unknown kind %d", m.Exports[i].Name, k)
				}
			}
		case secStart:
			f := s.u32()
			m.Start = &f
		case secElement:
			m.readElements(s, lim)
		case secDataCount:
			n := s.u32()
			m.DataCount = &n
		case secCode:
			m.readCode(s, lim, funcsDeclared)
		case secData:
			m.readData(s, lim)
		}
		if s.err == nil && !s.done() {
			s.fail(errors.New("the section has bytes past its content"))
		}
		if s.err != nil {
			var le *LimitError
			if errors.As(s.err, &le) {
				return nil, le
			}
			return nil, &Error{s.off, fmt.Errorf("section %d: %v", id, s.err)}
		}
	}
	if len(m.Funcs) != len(m.Code) {
		return nil, &Error{len(wasm), fmt.Errorf("%d functions are declared but %d have code", len(m.Funcs), len(m.Code))}
	}
	if m.DataCount != nil && int(*m.DataCount) != len(m.Data) {
		return nil, &Error{len(wasm), fmt.Errorf("the data count section says %d segments; the data section has %d", *m.DataCount, len(m.Data))}
	}
	if err := m.checkIndices(); err != nil {
		return nil, err
	}
	return m, nil
}

func (m *Module) readTypes(s *reader, lim Limits) {
	n := s.count("types", lim.MaxTypes, 3)
	m.Types = make([]FuncType, n)
	for i := range m.Types {
		if form := s.byte(); s.err == nil && form != 0x60 {
			s.failf("type %d: form 0x%02x is not a function type", i, form)
			return
		}
		var t FuncType
		np := s.count("parameters of a function type", lim.MaxParams, 1)
		t.Params = make([]ValType, np)
		for j := range t.Params {
			t.Params[j] = s.valType()
		}
		nr := s.count("results of a function type", lim.MaxParams, 1)
		t.Results = make([]ValType, nr)
		for j := range t.Results {
			t.Results[j] = s.valType()
		}
		m.Types[i] = t
	}
}

func (m *Module) readImports(s *reader, lim Limits) {
	n := s.count("imports", lim.MaxImports, 4)
	m.Imports = make([]Import, n)
	for i := range m.Imports {
		im := Import{Module: s.name(), Name: s.name(), Kind: s.byte()}
		switch im.Kind {
		case ExternFunc:
			im.Type = s.u32()
			m.importedFuncs++
		case ExternTable:
			s.refType()
			s.resizable(32)
			m.importedTables++
		case ExternMemory:
			s.resizable(32)
			m.importedMemories++
		case ExternGlobal:
			s.valType()
			s.byte()
			m.importedGlobals++
		case ExternTag:
			s.fail(errors.New("the exception handling proposal (tags) is not supported"))
		default:
			s.failf("import %s.%s of unknown kind %d", im.Module, im.Name, im.Kind)
		}
		m.Imports[i] = im
	}
	if m.importedFuncs+len(m.Funcs) > lim.MaxFunctions {
		s.fail(&LimitError{Limit: "functions", Max: int64(lim.MaxFunctions), Got: int64(m.importedFuncs)})
	}
}

// readElements reads element segments.
func (m *Module) readElements(s *reader, lim Limits) {
	n := s.count("element segments", lim.MaxElementSegments, 1)
	m.HasElements = true
	m.Elements = make([]Element, n)
	var total int64
	for i := 0; i < n && s.err == nil; i++ {
		el := &m.Elements[i]
		el.Flags = s.u32()
		if el.Flags > 7 {
			s.failf("element segment %d: flags %d", i, el.Flags)
			return
		}
		if el.Flags == 2 || el.Flags == 6 { // active with an explicit table
			el.Table = s.u32()
		}
		if el.Flags&1 == 0 { // active: an offset
			el.Offset = constExpr(s)
		}
		switch {
		case el.Flags == 1 || el.Flags == 2 || el.Flags == 3:
			if el.Type = s.byte(); s.err == nil && el.Type != 0 {
				s.failf("element segment %d: element kind 0x%02x", i, el.Type)
			}
		case el.Flags >= 5:
			el.Type = byte(s.refType())
		}
		items := s.count("elements of a segment", lim.MaxSegmentElements, 1)
		if total += int64(items); total > int64(lim.MaxSegmentElements) {
			s.fail(&LimitError{Limit: "table elements in element segments", Max: int64(lim.MaxSegmentElements), Got: total})
			return
		}
		for range items {
			if el.Flags&4 == 0 {
				el.Funcs = append(el.Funcs, s.u32())
			} else {
				el.Exprs = append(el.Exprs, constExpr(s))
			}
		}
	}
}

func (m *Module) readCode(s *reader, lim Limits, declared int) {
	n := s.count("function bodies", lim.MaxFunctions, 1)
	if declared >= 0 && n != declared || declared < 0 && n > 0 {
		s.failf("the code section has %d bodies for %d declared functions", n, max(declared, 0))
		return
	}
	m.Code = make([]Body, n)
	for i := range m.Code {
		size := s.u32()
		where := func() string { return fmt.Sprintf("function %d", m.importedFuncs+i) }
		if s.err == nil && uint64(size) > uint64(lim.MaxFunctionBytes) {
			s.fail(&LimitError{Limit: "function body size in bytes", Max: int64(lim.MaxFunctionBytes), Got: int64(size), Where: where()})
			return
		}
		start := s.off
		b := &reader{b: s.bytes(uint64(size)), off: start}
		if s.err != nil {
			return
		}
		var body Body
		groups := b.count("local declarations", lim.MaxLocals, 2)
		var locals uint64
		for range groups {
			l := Local{Count: b.u32(), Type: b.valType()}
			locals += uint64(l.Count)
			if b.err == nil && locals > uint64(lim.MaxLocals) {
				b.fail(&LimitError{Limit: "locals of a function", Max: int64(lim.MaxLocals), Got: int64(locals), Where: where()})
			}
			body.Locals = append(body.Locals, l)
		}
		body.Code, body.off = b.b, b.off
		if b.err != nil {
			s.fail(b.err)
			return
		}
		m.Code[i] = body
	}
}

func (m *Module) readData(s *reader, lim Limits) {
	n := s.count("data segments", lim.MaxDataSegments, 1)
	m.Data = make([]Data, n)
	for i := range m.Data {
		d := &m.Data[i]
		switch flags := s.u32(); flags {
		case 0:
			d.Offset = constExpr(s)
		case 1:
			d.Passive = true
		case 2:
			d.Memory = s.u32()
			d.Offset = constExpr(s)
		default:
			s.failf("data segment %d: flags %d", i, flags)
			return
		}
		d.Init = s.bytes(uint64(s.u32()))
	}
}

// checkIndices checks the indices the host relies on: function types, the
// start function and exports.
func (m *Module) checkIndices() error {
	for i, im := range m.Imports {
		if im.Kind == ExternFunc && int(im.Type) >= len(m.Types) {
			return &Error{0, fmt.Errorf("import %d: type %d does not exist", i, im.Type)}
		}
	}
	for i, t := range m.Funcs {
		if int(t) >= len(m.Types) {
			return &Error{0, fmt.Errorf("function %d: type %d does not exist", m.importedFuncs+i, t)}
		}
	}
	counts := map[byte]int{
		ExternFunc: m.NumFuncs(), ExternTable: m.importedTables + len(m.Tables),
		ExternMemory: m.importedMemories + len(m.Memories), ExternGlobal: m.NumGlobals(),
	}
	seen := map[string]bool{}
	for _, e := range m.Exports {
		if int(e.Index) >= counts[e.Kind] {
			return &Error{0, fmt.Errorf("export %q: index %d does not exist", e.Name, e.Index)}
		}
		if seen[e.Name] {
			return &Error{0, fmt.Errorf("export %q appears twice", e.Name)}
		}
		seen[e.Name] = true
	}
	for i, el := range m.Elements {
		for _, f := range el.Funcs {
			if int(f) >= m.NumFuncs() {
				return &Error{0, fmt.Errorf("element segment %d: function %d does not exist", i, f)}
			}
		}
	}
	if m.Start != nil && int(*m.Start) >= m.NumFuncs() {
		return &Error{0, fmt.Errorf("start function %d does not exist", *m.Start)}
	}
	return nil
}

// NumFuncs returns the number of functions, imported and defined.
func (m *Module) NumFuncs() int { return m.importedFuncs + len(m.Funcs) }

// NumGlobals returns the number of globals, imported and defined.
func (m *Module) NumGlobals() int { return m.importedGlobals + len(m.Globals) }

// FuncType returns the signature of function index f (imported first).
func (m *Module) FuncType(f uint32) (FuncType, bool) {
	if int(f) < m.importedFuncs {
		seen := 0
		for _, im := range m.Imports {
			if im.Kind == ExternFunc {
				if seen == int(f) {
					return m.Types[im.Type], true
				}
				seen++
			}
		}
	}
	i := int(f) - m.importedFuncs
	if i < 0 || i >= len(m.Funcs) {
		return FuncType{}, false
	}
	return m.Types[m.Funcs[i]], true
}

// Export returns the export of a name.
func (m *Module) Export(name string) (Export, bool) {
	for _, e := range m.Exports {
		if e.Name == name {
			return e, true
		}
	}
	return Export{}, false
}

// constExpr reads a constant expression up to and including its end, and
// returns its bytes.
func constExpr(r *reader) []byte {
	start := r.b
	startOff := r.off
	for r.err == nil {
		in := readInstr(r)
		if r.err != nil {
			break
		}
		switch in.op {
		case opEnd:
			return start[:r.off-startOff]
		case opI32Const, opI64Const, opF32Const, opF64Const, opRefNull, opRefFunc, opGlobalGet,
			opI32Add, opI32Sub, opI32Mul, opI64Add, opI64Sub, opI64Mul, simd(12):
		default:
			r.failf("opcode %s is not allowed in a constant expression", in.op)
		}
	}
	return nil
}
