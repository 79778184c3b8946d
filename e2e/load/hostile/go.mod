module vitrine/e2e/load/hostile

go 1.24

require vitrine/wasm-sdk v0.0.0

replace vitrine/wasm-sdk => ../../../wasm-sdk
