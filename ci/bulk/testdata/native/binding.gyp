{"targets":[
  {"target_name":"greeting","type":"static_library","sources":["greeting.c"]},
  {"target_name":"hello","sources":["hello.c"],"dependencies":["greeting"],"libraries":["-lutil"]}
]}
