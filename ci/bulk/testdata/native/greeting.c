/* A static library the addon links: node-gyp archives it with ar, which
   a BusyBox /bin/sh would take for its own applet. */
const char *greeting(void) { return "hello from C"; }
