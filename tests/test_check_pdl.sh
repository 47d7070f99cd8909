#!/bin/sh
# test_check_pdl.sh SRC_ROOT - check_pdl.sh on the tree (every kernel launched through hx_launch waits first),
# then on planted trees: a kernel without the wait beside hx_launch fails it, the same kernel with the wait (and a
# probe, a declaration and __launch_bounds__ in the signature) passes, and a file without hx_launch is not checked.
set -u
root=${1:?usage: test_check_pdl.sh SRC_ROOT}
check="$root/tests/check_pdl.sh"
fail() { echo "FAIL: $*"; exit 1; }
sh "$check" "$root" || fail "the tree: a kernel launched through hx_launch without hx_pdl_wait() first"
t=$(mktemp -d) || exit 1
trap 'rm -rf "$t"' EXIT
mkdir -p "$t/nets" "$t/kernels"
cat > "$t/nets/a.cu" <<'CU'
template <int V> __global__ void __launch_bounds__(128, V == 1 ? 2 : 1) good(int *y, int n) {
  hx_pdl_wait();
  if (n) y[0] = V;
}
__global__ void declared(int *y);
static __global__ void sm90a_probe(int *o) { *o = 1; }
__global__ void late(int *y) {
  y[1] = 2;
  hx_pdl_wait();
}
void f(int *y) { hx_launch(good<1>, 1, 1, 0, 0, y, 1); hx_launch(late, 1, 1, 0, 0, y); }
CU
cat > "$t/kernels/b.cu" <<'CU'
__global__ void plain(int *y) { y[0] = 1; }
CU
out=$(sh "$check" "$t") && fail "a kernel writing before its wait passed: $out"
echo "$out" | grep -q "late" || fail "the offending kernel is not named: $out"
echo "$out" | grep -q "good\|probe\|declared\|plain" && fail "a kernel that keeps the rule was reported: $out"
sed -i 's/^  y\[1\] = 2;$//' "$t/nets/a.cu"
out=$(sh "$check" "$t") || fail "the wait first was not accepted: $out"
echo "$out" | grep -q "pdl: 2 kernels in 1 files" || fail "wrong count: $out"
echo "check_pdl: the tree passes, a write before the wait fails, the wait first passes"
