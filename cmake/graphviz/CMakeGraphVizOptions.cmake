# What scripts/draw-layers.sh draws with `cmake --graphviz`: the library's layers, the libraries
# made of them, the CLI and its tool libraries, and the outside libraries they link. Tests,
# benchmarks, GoogleTest and the compile-flag interface targets are left out.
set(GRAPHVIZ_GRAPH_NAME "tessel")
set(GRAPHVIZ_IGNORE_TARGETS "^test_" "^tessel_test_support$" "^tessel_warnings$" "^GTest::" "^gtest"
    "^gmock" "^benchmark" "^bench_" "^fuzz_" "^Threads::Threads$")
set(GRAPHVIZ_GENERATE_PER_TARGET FALSE)
set(GRAPHVIZ_GENERATE_DEPENDERS FALSE)
