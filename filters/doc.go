// Package filters is vitrine's WebAssembly host: it loads filters (a folder
// holding filter.wasm and filter.json, see wasm-sdk/ABI.md) and runs them in
// a sandbox on wazero.
//
// A Host loads every filter of a directory into a Set, compiling each module
// once (with an on-disk compilation cache) and checking it before anything
// runs: the ABI marker export, the required export and its signature, and
// that every import is a known `vitrine` host function or part of WASI. Each
// loaded filter owns a wazero runtime (its memory cap is a runtime setting)
// and a bounded pool of instances; an instance that traps, times out, grows
// past its memory cap or calls proc_exit is closed and never reused.
//
// A loaded filter is a plain value: a Transformation works on *image.NRGBA
// pixels, a Listener on an Event. The package imports nothing of vitrine but
// engine/schema (standard library only: the parameter schema, the colour
// syntax and event patterns it shares with the engine and the api); package
// main (filters.go) hands transformations to the engine's registry and
// listeners to the api's event bus, which define the small interfaces these
// satisfy.
//
// Filters load in the background, one at a time, each within
// Config.CompileTimeout: Start returns at once, and until a filter's first
// version is ready the Set lists it as Pending, which answers 503. Reload
// builds a new Set from the directory (reusing filters whose content hash
// did not change, keeping a changed filter's old version until the new one
// is ready), swaps it in atomically and retires the filters that left:
// calls already running finish on the version they started with.
package filters
