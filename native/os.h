// The system calls of os.c, added to the addon's exports by addon.c, and the helper they share.
#ifndef PDB_OS_H
#define PDB_OS_H
#include <node_api.h>

void osExports(napi_env env, napi_value exports);
// The inotify calls of watch.c.
void watchExports(napi_env env, napi_value exports);
// A JavaScript string as a malloc()ed UTF-8 C string; NULL when it is none (addon.c).
char *napiString(napi_env env, napi_value v);

#endif
