// mpnanny stand-in (see host_defines.h).
#pragma once
#include "driver_types.h"
#include "vector_types.h"
