//go:build unix && !linux

package filters

const mapNoReserve = 0
