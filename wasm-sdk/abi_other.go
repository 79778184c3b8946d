//go:build !wasip1

package vitrine

// This file stands in for abi_wasip1.go in native builds, so that the pure
// parts of the SDK and of filters compile and unit test on the developer's
// machine. It is deliberately not a host: every call answers codeNoHost,
// which the SDK reports as ErrNoHost.

func hostParamGet(string, []byte) int32          { return codeNoHost }
func hostSettingsGet([]byte) int32               { return codeNoHost }
func hostImageWidth() int32                      { return codeNoHost }
func hostImageHeight() int32                     { return codeNoHost }
func hostPixelsRead([]byte) int32                { return codeNoHost }
func hostPixelsWrite(int32, int32, []byte) int32 { return codeNoHost }
func hostEventGet([]byte) int32                  { return codeNoHost }
func hostBodyRead([]byte) int32                  { return codeNoHost }
func hostBodyWrite([]byte) int32                 { return codeNoHost }
func hostMetadataGet([]byte) int32               { return codeNoHost }
func hostMetadataSet([]byte) int32               { return codeNoHost }
func hostStatsAdd(string, int64) int32           { return codeNoHost }
func hostStatsSet(string, []byte) int32          { return codeNoHost }
func hostLog(int32, string) int32                { return codeNoHost }
func hostReject(int32, string) int32             { return codeNoHost }
