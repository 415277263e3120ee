// mpnanny stand-in (see host_defines.h): cuBLAS's v2 API, declared in cublas_api.h.
#pragma once
#include "cublas_api.h"
