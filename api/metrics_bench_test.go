package api_test

import (
	"testing"

	"github.com/vitrine/vitrine/api"
)

// BenchmarkMetricsOverhead runs the 200x200 thumbnail of a 1920x1080 JPEG
// through HTTP (variant cache off, every request renders) with metrics off
// and on: on, every request, pipeline stage, query and blob read is
// observed, as `metrics.enabled: true` does. The two run interleaved under
// -count; compare their ns/op:
//
//	go test ./api -run '^$' -bench MetricsOverhead -benchtime 3s -count 4
func BenchmarkMetricsOverhead(b *testing.B) {
	srcs := benchJPEGs(b, 1920, 1080)
	for _, on := range []bool{false, true} {
		name := "off"
		var opts []func(*api.Deps)
		if on {
			name = "on"
			opts = append(opts, func(d *api.Deps) {
				m := api.NewMetrics()
				d.Engine.SetObserver(m)
				d.DB.Observe(m.ObserveDB)
				d.Blobs.Observe(m.ObserveBlob)
				m.WatchEngine(d.Engine.Load)
				d.Metrics = m
			})
		}
		b.Run(name, func(b *testing.B) {
			s := newBenchServer(b, false, opts...)
			urls := make([]string, len(srcs))
			for i, src := range srcs {
				urls[i] = s.imageURL(s.upload(b, src), "thumbnail:width=200,height=200")
			}
			b.ReportAllocs()
			ns := runParallel(b, func(i int) error {
				_, err := s.fetch(urls[i%len(urls)])
				return err
			})
			b.ReportMetric(1e9/ns, "ops/s")
		})
	}
}
