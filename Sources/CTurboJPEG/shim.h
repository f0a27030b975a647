#ifndef EDGEVISION_CTURBOJPEG_SHIM_H
#define EDGEVISION_CTURBOJPEG_SHIM_H
#include <stddef.h>
#include <turbojpeg.h>
#endif
