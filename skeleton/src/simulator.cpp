// Being written: the discrete-event simulator.
#include "pfarm/simulator.hpp"
