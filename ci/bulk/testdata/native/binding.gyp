{"targets":[{"target_name":"hello","sources":["hello.c"]}]}
