#include "transports/phost/helper/phost-helper.h"
