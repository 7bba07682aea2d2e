#!/bin/sh
# Generate the configure script and Makefile.in from a git checkout.
set -e
cd "$(dirname "$0")"
mkdir -p etc
autoreconf -fi
