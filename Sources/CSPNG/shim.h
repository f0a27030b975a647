#ifndef EDGEVISION_CSPNG_SHIM_H
#define EDGEVISION_CSPNG_SHIM_H
#include <spng.h>
#endif
