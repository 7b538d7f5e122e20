#include "redis_test_support.h"
