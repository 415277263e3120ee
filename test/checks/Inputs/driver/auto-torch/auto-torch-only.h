// Only in the LibTorch that mpnanny-check finds by itself (driver-flags-torch.test puts
// it there): including it shows whether that LibTorch's folders were added.
#pragma once
