#include "net.h"
#include <ATen/autocast_mode.h>

void enable_amp() { at::autocast::set_enabled(true); }
