module github.com/vitrine/vitrine/e2e/load/hostile

go 1.24

require github.com/vitrine/vitrine/wasm-sdk v0.0.0

replace github.com/vitrine/vitrine/wasm-sdk => ../../../wasm-sdk
