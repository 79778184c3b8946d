module github.com/vitrine/vitrine/wasm-sdk

go 1.24
