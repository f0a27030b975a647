#ifndef EDGEVISION_CPTHREADPOOL_SHIM_H
#define EDGEVISION_CPTHREADPOOL_SHIM_H
#include <stddef.h>
#include <pthreadpool.h>
#endif
