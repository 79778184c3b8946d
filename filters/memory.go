package filters

// sliceMemory is a linear memory in a Go slice, for platforms (or
// failures) without an anonymous mapping.
type sliceMemory struct {
	buf []byte
	max uint64
}

func (m *sliceMemory) Reallocate(size uint64) []byte {
	if size > m.max {
		return nil
	}
	if uint64(cap(m.buf)) < size {
		nb := make([]byte, size, min(max(size, 2*uint64(cap(m.buf))), m.max))
		copy(nb, m.buf)
		m.buf = nb
	}
	m.buf = m.buf[:size]
	return m.buf
}

func (m *sliceMemory) Free() { m.buf = nil }
