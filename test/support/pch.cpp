// Compiles the tests' shared precompiled header once; test binaries reuse it.
