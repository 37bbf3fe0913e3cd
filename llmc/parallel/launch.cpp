#include "llmc/parallel/launch.h"

#include <cctype>
#include <cerrno>
#include <climits>
#include <cstdlib>
#include <initializer_list>
#include <stdexcept>

namespace {

[[noreturn]] void fail(const std::string& msg) { throw std::runtime_error(msg); }

// A whole decimal integer (optional sign) that fits int; false if anything else.
bool parse_int(const char* s, int* out) {
    if (!s || !*s) return false;
    errno = 0;
    char* end = nullptr;
    const long v = strtol(s, &end, 10);
    if (errno != 0 || *end != '\0' || v < INT_MIN || v > INT_MAX || isspace((unsigned char)*s)) return false;
    *out = (int)v;
    return true;
}

int env_int(const EnvFn& env, const char* name) {
    const char* v = env(name);
    int out;
    if (!parse_int(v, &out))
        fail(std::string("environment: ") + name + "='" + (v ? v : "") + "' is not an integer");
    return out;
}

// One launcher's variables: null when none is set; throws when only some of the required ones are.
bool group_present(const EnvFn& env, const char* launcher, std::initializer_list<const char*> required) {
    const char* set = nullptr;
    const char* unset = nullptr;
    for (const char* name : required) (env(name) ? set : unset) = name;
    if (!set) return false;
    if (unset)
        fail(std::string("environment: ") + set + " is set but " + unset + " is not (" + launcher +
             " variables are all or nothing)");
    return true;
}

LaunchInfo make_info(const EnvFn& env, const char* launcher, const char* rank, const char* size,
                     const char* local) {
    LaunchInfo li;
    li.launcher = launcher;
    li.rank = env_int(env, rank);
    li.world_size = env_int(env, size);
    li.local_rank = local && env(local) ? env_int(env, local) : 0;
    if (li.world_size < 1)
        fail(std::string("environment: ") + size + "=" + std::to_string(li.world_size) +
             " must be at least 1");
    if (li.rank < 0 || li.rank >= li.world_size)
        fail(std::string("environment: ") + rank + "=" + std::to_string(li.rank) + " is outside [0, " + size +
             "=" + std::to_string(li.world_size) + ")");
    if (li.local_rank < 0)
        fail(std::string("environment: ") + local + "=" + std::to_string(li.local_rank) + " is negative");
    return li;
}

}  // namespace

LaunchInfo detect_launch(const EnvFn& env) {
    if (group_present(env, "Open MPI",
                      {"OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK"}))
        return make_info(env, "mpirun", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE",
                         "OMPI_COMM_WORLD_LOCAL_RANK");
    if (group_present(env, "MPICH/PMI", {"PMI_RANK", "PMI_SIZE"}))
        return make_info(env, "mpirun", "PMI_RANK", "PMI_SIZE", "MPI_LOCALRANKID");
    if (group_present(env, "torchrun", {"RANK", "WORLD_SIZE", "LOCAL_RANK"}))
        return make_info(env, "torchrun", "RANK", "WORLD_SIZE", "LOCAL_RANK");
    if (group_present(env, "Slurm", {"SLURM_PROCID", "SLURM_NTASKS", "SLURM_LOCALID"}))
        return make_info(env, "srun", "SLURM_PROCID", "SLURM_NTASKS", "SLURM_LOCALID");
    LaunchInfo li;
    li.launcher = "single";
    return li;
}

LaunchInfo detect_launch() {
    return detect_launch([](const char* name) -> const char* { return getenv(name); });
}

Rendezvous default_rendezvous(const LaunchInfo& li, const EnvFn& env) {
    Rendezvous r;
    if (li.world_size == 1 || li.launcher == "single") return r;  // nothing to exchange
    if (li.launcher == "mpirun") {
        r.kind = Rendezvous::Kind::Mpi;
        return r;
    }
    const char* addr = env("MASTER_ADDR");
    const char* port_s = env("MASTER_PORT");
    if (li.launcher == "torchrun" || li.launcher == "srun") {
        if (!addr || !*addr || !port_s)
            fail(li.launcher + " with " + std::to_string(li.world_size) +
                 " ranks: MASTER_ADDR and MASTER_PORT are not both set; pass --rendezvous tcp://HOST:PORT or "
                 "file:PATH");
        int port;
        if (!parse_int(port_s, &port) || port < 1 || port > 65535)
            fail(std::string("environment: MASTER_PORT='") + port_s + "' is not a port number (1..65535)");
        // torchrun's TCPStore already listens on MASTER_PORT on rank 0's node: take the next port.
        if (li.launcher == "torchrun") port++;
        if (port > 65535)
            fail(
                "environment: MASTER_PORT=65535 leaves no port for the id exchange (MASTER_PORT+1); pass "
                "--rendezvous");
        return parse_rendezvous(std::string("tcp://") + addr + ":" + std::to_string(port));
    }
    fail("launcher '" + li.launcher + "' has no default rendezvous; pass --rendezvous");
}
