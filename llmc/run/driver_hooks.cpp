// The trainer's driver hooks: the defaults (llmc/run/driver_hooks.h). Alone in its archive member, so a
// test build can link its own driver_hooks() instead.
#include "llmc/run/driver_hooks.h"

const DriverHooks& driver_hooks() {
    static const DriverHooks defaults;
    return defaults;
}
