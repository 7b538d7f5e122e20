// heartwheel/auth/cidr_set.h - auth's name for the set of IP networks, which
// lives in common (heartwheel/common/cidr_set.h) so that net can use it for
// the PROXY protocol's trusted sources (ServerOptions::proxy_protocol_from)
// without depending on auth. Same type, same contract.
#pragma once

#include <heartwheel/common/cidr_set.h>

namespace heartwheel::auth {

using CidrSet = heartwheel::CidrSet;

}  // namespace heartwheel::auth
