//go:build !asan

package engine

// exactBuffers is true under AddressSanitizer (pixelpool_asan.go).
const exactBuffers = false

func exactBuffer(int) ([]byte, func(), error) { panic("engine: exactBuffer outside -asan") }
