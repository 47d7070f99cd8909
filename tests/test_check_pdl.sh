#!/bin/sh
# test_check_pdl.sh SRC_ROOT - check_pdl.sh on the tree (every kernel launched through hx_launch waits first), then
# on planted trees, each a way a kernel could touch memory before the wait: written before it, hidden behind a
# comment that holds `__global__ (`, named like a probe, in a file that spells `hx_launch (`, defined in a header.
# Kernels that keep the rule (the wait first, after a comment; a plain-launched probe; a declaration) pass.
set -u
root=${1:?usage: test_check_pdl.sh SRC_ROOT}
check="$root/tests/check_pdl.sh"
fail() { echo "FAIL: $*"; exit 1; }
sh "$check" "$root" || fail "the tree: a kernel launched through hx_launch without hx_pdl_wait() first"
t=$(mktemp -d) || exit 1
trap 'rm -rf "$t"' EXIT
mkdir -p "$t/nets" "$t/kernels"
# a file that keeps the rule: 3 kernels wait first, a probe launched plainly, a declaration
cat > "$t/nets/a.cu" <<'CU'
template <int V> __global__ void __launch_bounds__(128, V == 1 ? 2 : 1) good(int *y, int n) {
  hx_pdl_wait();
  if (n) y[0] = V;
}
__global__ void declared(int *y);
static __global__ void sm90a_probe(int *o) { *o = 1; }
__global__ void commented(int *y) { /* the wait first */ hx_pdl_wait(); y[0] = 0; }
namespace v1 {
__global__ void
    spaced(int *y) {
  hx_pdl_wait ( ) ;
  y[0] = 1;
}
}
void f(int *y, int *d) {
  hx_launch(good<1>, 1, 1, 0, 0, y, 1);
  hx_launch(commented, 1, 1, 0, 0, y);
  hx_launch(v1::spaced, 1, 1, 0, 0, y);
  sm90a_probe<<<1, 1>>>(d);
}
CU
out=$(sh "$check" "$t") || fail "a file that keeps the rule failed: $out"
echo "$out" | grep -q "pdl: 3 kernels in 1 files" || fail "wrong count: $out"
# each bad case alone beside the good file: it must fail and name its kernel
plant() { # plant NAME FILE: write stdin to FILE under the tree, expect a failure naming NAME, then remove it
  cat > "$t/$2"
  out=$(sh "$check" "$t") && fail "$1 passed: $out"
  echo "$out" | grep -q "$1" || fail "$1 not named: $out"
  echo "$out" | grep -q "good\|sm90a_probe\|commented\|spaced\|declared" && fail "$1: a kernel that keeps the rule reported: $out"
  rm -f "$t/$2"
}
plant late kernels/b.cu <<'CU'
__global__ void late(int *y) {
  y[1] = 2;
  hx_pdl_wait();
}
void g(int *y) { hx_launch(late, 1, 1, 0, 0, y); }
CU
plant hidden kernels/b.cu <<'CU'
/* a comment naming __global__ kernels( with an open parenthesis */
__global__ void hidden(int *y) { y[0] = 1; hx_pdl_wait(); }
void g(int *y) { hx_launch(hidden, 1, 1, 0, 0, y); }
CU
plant hash_probe_kernel kernels/b.cu <<'CU'
__global__ void hash_probe_kernel(int *y) { y[0] = 1; }
void g(int *y) { hx_launch(hash_probe_kernel, 1, 1, 0, 0, y); }
CU
plant spelled kernels/b.cu <<'CU'
__global__ void spelled(int *y) { y[0] = 1; }
void g(int *y) { hx_launch (spelled, 1, 1, 0, 0, y); }
CU
plant in_header kernels/b.cuh <<'CU'
__global__ void in_header(int *y) { hx_pdl_wait(); y[0] = 1; }
CU
plant b.cu kernels/b.cu <<'CU'
void g(int *y) { hx_launch(elsewhere, 1, 1, 0, 0, y); }
CU
# a file without hx_launch is not held to the rule
printf '__global__ void plain(int *y) { y[0] = 1; }\n' > "$t/kernels/c.cu"
sh "$check" "$t" > /dev/null || fail "a file without hx_launch was held to the rule"
echo "check_pdl: the tree passes; a write before the wait, a comment, a probe-like name, 'hx_launch (', a header and a file without kernels fail; the rule kept passes"
