module vitrine/wasm-sdk

go 1.24
