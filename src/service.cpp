// placeholder until the service lands
#include "dshpty/service.hpp"
