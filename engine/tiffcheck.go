package engine

import (
	"bytes"
	"encoding/binary"
)

// tiffSizes is the byte size of each TIFF field type (1-12).
var tiffSizes = [13]uint64{0, 1, 1, 2, 4, 8, 1, 1, 2, 4, 8, 4, 8}

// subIFDTags point at the EXIF, GPS and interoperability directories.
var subIFDTags = map[uint16]bool{0x8769: true, 0x8825: true, 0xa005: true}

// tiffSane reports whether an EXIF block's TIFF structure can be handed
// to goexif. Why: goexif follows directory chains without detecting
// cycles (a crafted upload hung it) and allocates whatever a tag's count
// claims; this walk refuses a directory seen twice, more than 64
// directories, and any value that would lie outside the block.
func tiffSane(b []byte) bool {
	b = bytes.TrimPrefix(b, []byte("Exif\x00\x00"))
	if len(b) < 8 {
		return false
	}
	var order binary.ByteOrder
	switch string(b[:2]) {
	case "II":
		order = binary.LittleEndian
	case "MM":
		order = binary.BigEndian
	default:
		return false
	}
	if order.Uint16(b[2:]) != 42 {
		return false
	}
	seen := map[uint32]bool{}
	queue := []uint32{order.Uint32(b[4:])}
	for len(queue) > 0 {
		off := queue[0]
		queue = queue[1:]
		if off == 0 {
			continue
		}
		if seen[off] || len(seen) >= 64 {
			return false
		}
		seen[off] = true
		next, subs, ok := tiffDir(b, order, off)
		if !ok {
			return false
		}
		queue = append(append(queue, subs...), next)
	}
	return true
}

// tiffDir checks one directory and returns the next one's offset and the
// sub-directories it points at.
func tiffDir(b []byte, order binary.ByteOrder, off uint32) (next uint32, subs []uint32, ok bool) {
	n := uint64(len(b))
	if uint64(off)+2 > n {
		return 0, nil, false
	}
	count := uint64(order.Uint16(b[off:]))
	end := uint64(off) + 2 + 12*count
	if end+4 > n {
		return 0, nil, false
	}
	for i := range count {
		e := b[uint64(off)+2+12*i:]
		tag, typ, cnt := order.Uint16(e), order.Uint16(e[2:]), uint64(order.Uint32(e[4:]))
		size := uint64(1)
		if int(typ) < len(tiffSizes) && typ > 0 {
			size = tiffSizes[typ]
		}
		if total := size * cnt; total > 4 && uint64(order.Uint32(e[8:]))+total > n {
			return 0, nil, false
		}
		if subIFDTags[tag] {
			subs = append(subs, order.Uint32(e[8:]))
		}
	}
	return order.Uint32(b[end:]), subs, true
}
