# Sourced by .ci/run: starts versitygw (a real S3 server) on loopback and
# exports VITRINE_TEST_S3 and the credentials for the S3 tests.
command -v versitygw >/dev/null || go install github.com/versity/versitygw/cmd/versitygw@v1.8.0
vgw_root=$(mktemp -d)
mkdir -p "$vgw_root/vitrine-test"   # posix backend: a bucket is a directory
ROOT_ACCESS_KEY=test ROOT_SECRET_KEY=testsecret versitygw --port 127.0.0.1:7070 posix "$vgw_root" >"$vgw_root.log" 2>&1 &
vgw_pid=$!
trap 'kill $vgw_pid 2>/dev/null; rm -rf "$vgw_root"' EXIT
for _ in $(seq 1 30); do
  (exec 3<>/dev/tcp/127.0.0.1/7070) 2>/dev/null && break
  sleep 1
done
export AWS_ACCESS_KEY_ID=test AWS_SECRET_ACCESS_KEY=testsecret
export VITRINE_TEST_S3='s3://vitrine-test?endpoint=http://127.0.0.1:7070&region=us-east-1&use_path_style=true'
