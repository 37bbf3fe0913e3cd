# shellcheck shell=bash
# The one-line test results every test script prints (make test counts them). Sourced; not a test itself.
pass() { echo "[PASS] $1"; }
fail() { echo "[FAIL] $1: $2"; }
skip() { echo "[SKIP] $1: $2"; }
