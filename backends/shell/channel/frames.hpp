// The stream protocol moved to link/ (link/frames.hpp: the wire; link/messages.hpp: the
// frames as structs). Kept for code written against the old path; new code includes those.
#pragma once

#include "link/messages.hpp"
