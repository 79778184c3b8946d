package filters

// A tiny WebAssembly assembler for the malformed and hostile modules the
// tests need byte for byte: a module is built from imports, functions
// (with hand-written bodies), an optional memory and exports.

const (
	tI32 = 0x7f
	tI64 = 0x7e
)

type wasmFunc struct {
	params, results []byte
	body            []byte // instructions without the final `end`
	export          string
}

type wasmImport struct {
	module, name    string
	params, results []byte
	memory          bool
}

type wasmModule struct {
	imports     []wasmImport
	funcs       []wasmFunc
	memPages    int    // 0: no memory
	memName     string // export name of the memory; "" with memPages > 0 means "memory"
	noMemExport bool
}

func leb(v uint32) []byte {
	var out []byte
	for {
		b := byte(v & 0x7f)
		v >>= 7
		if v != 0 {
			out = append(out, b|0x80)
			continue
		}
		return append(out, b)
	}
}

func wname(s string) []byte { return append(leb(uint32(len(s))), s...) }

func vec(items [][]byte) []byte {
	out := leb(uint32(len(items)))
	for _, it := range items {
		out = append(out, it...)
	}
	return out
}

func section(id byte, content []byte) []byte {
	return append(append([]byte{id}, leb(uint32(len(content)))...), content...)
}

func functype(params, results []byte) []byte {
	return append(append(append([]byte{0x60}, leb(uint32(len(params)))...), params...),
		append(leb(uint32(len(results))), results...)...)
}

// bytes encodes the module; every function gets its own type entry.
func (m wasmModule) bytes() []byte {
	var types, imports, funcs, exports, code [][]byte
	nImportedFuncs := 0
	for _, im := range m.imports {
		if im.memory {
			imports = append(imports, append(append(wname(im.module), wname(im.name)...), 0x02, 0x00, 0x01))
			continue
		}
		imports = append(imports, append(append(wname(im.module), wname(im.name)...), append([]byte{0x00}, leb(uint32(len(types)))...)...))
		types = append(types, functype(im.params, im.results))
		nImportedFuncs++
	}
	for i, f := range m.funcs {
		funcs = append(funcs, leb(uint32(len(types))))
		types = append(types, functype(f.params, f.results))
		body := append(append([]byte{0x00}, f.body...), 0x0b) // no locals
		code = append(code, append(leb(uint32(len(body))), body...))
		if f.export != "" {
			exports = append(exports, append(append(wname(f.export), 0x00), leb(uint32(nImportedFuncs+i))...))
		}
	}
	out := []byte{0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00}
	out = append(out, section(1, vec(types))...)
	if len(imports) > 0 {
		out = append(out, section(2, vec(imports))...)
	}
	out = append(out, section(3, vec(funcs))...)
	importsMemory := false
	for _, im := range m.imports {
		importsMemory = importsMemory || im.memory
	}
	if m.memPages == 0 && importsMemory && !m.noMemExport {
		exports = append(exports, append(wname("memory"), 0x02, 0x00))
	}
	if m.memPages > 0 {
		out = append(out, section(5, vec([][]byte{append([]byte{0x00}, leb(uint32(m.memPages))...)}))...)
		if !m.noMemExport {
			name := m.memName
			if name == "" {
				name = "memory"
			}
			exports = append(exports, append(wname(name), 0x02, 0x00))
		}
	}
	out = append(out, section(7, vec(exports))...)
	out = append(out, section(10, vec(code))...)
	return out
}

// Instruction snippets.
var (
	opUnreachable = []byte{0x00}
	opReturn0     = []byte{0x41, 0x00} // i32.const 0
	// opLoop spins forever: loop br 0 end, then a result for validation.
	opLoop = []byte{0x03, 0x40, 0x0c, 0x00, 0x0b, 0x41, 0x00}
	// opGrowForever grows memory one page at a time until it fails, then
	// traps: loop (memory.grow 1; i32.const -1; i32.ne; br_if 0) unreachable.
	opGrowForever = []byte{0x03, 0x40, 0x41, 0x01, 0x40, 0x00, 0x41, 0x7f, 0x47, 0x0d, 0x00, 0x0b, 0x00}
)

// abiModule is a well-formed transformation module whose vitrine_transform
// runs body (which must leave one i32), plus extra imports and functions.
func abiModule(body []byte, imports ...wasmImport) wasmModule {
	return wasmModule{
		imports: imports,
		funcs: []wasmFunc{
			{export: "vitrine_abi_v1"},
			{results: []byte{tI32}, body: body, export: "vitrine_transform"},
		},
		memPages: 1,
	}
}
