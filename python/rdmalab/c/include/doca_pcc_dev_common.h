/* doca_pcc_dev_common.h: DOCA PCC device API names, provided by rdmalab (Apache-2.0). */
#include "rdmalab_cc.h"
