// Multi-process launch: which launcher started this process (rank, world size, local rank), and the bootstrap
// exchange that hands rank 0's NCCL unique id to every other rank before ncclCommInitRank.
//
// Launchers and the variables they set (first match wins):
//   mpirun:   Open MPI OMPI_COMM_WORLD_RANK / _SIZE / _LOCAL_RANK; MPICH or Intel MPI (Hydra) PMI_RANK,
//             PMI_SIZE, MPI_LOCALRANKID (optional, else 0).
//   torchrun: RANK, WORLD_SIZE, LOCAL_RANK (+ MASTER_ADDR, MASTER_PORT). Checked before Slurm: a torchrun
//             started inside a Slurm job also sees the SLURM_* variables of its one task per node.
//   srun:     SLURM_PROCID, SLURM_NTASKS, SLURM_LOCALID (MASTER_ADDR / MASTER_PORT if the job script
//             exports them). An sbatch script itself has these too (rank 0 of N): run train_gpt under srun.
//   single:   none of the above, one process.
//
// Rendezvous (--rendezvous, else default_rendezvous): how the 128-byte id travels.
//   tcp://HOST:PORT  rank 0 listens on PORT (all IPv4 addresses), the others connect to HOST. The torchrun
//                    default is MASTER_PORT+1: torchrun's own store already listens on MASTER_PORT.
//   file:PATH        rank 0 writes PATH atomically on a filesystem every rank sees; the others poll for it.
//                    Rank 0 removes it once everyone joined (cleanup_rendezvous): a stale id would hang
//                    a later run.
//   mpi              MPI_Bcast through the MPI library loaded at run time (dlopen: no build dependency on
//                    MPI).
// A world of one needs no exchange: bootstrap_broadcast returns at once and default_rendezvous gives None.
// Host-only.
#pragma once
#include <cstddef>
#include <functional>
#include <string>

struct LaunchInfo {
    int rank = 0, world_size = 1, local_rank = 0;
    std::string launcher;  // "single", "mpirun", "srun", "torchrun"
};

// getenv-like: the value of a variable, or nullptr when it is unset.
using EnvFn = std::function<const char*(const char*)>;

// Throws std::runtime_error (one line, naming the variable) on a non-integer value, world_size < 1, rank
// outside [0, world_size), local_rank < 0, or a partial set (e.g. RANK without WORLD_SIZE).
LaunchInfo detect_launch(const EnvFn& env);
LaunchInfo detect_launch();  // the process environment

struct Rendezvous {
    enum class Kind { None, Tcp, File, Mpi } kind = Kind::None;
    std::string host;  // Tcp
    int port = 0;      // Tcp
    std::string path;  // File
};

// "tcp://HOST:PORT" (HOST a name or IPv4 address, PORT 1..65535), "file:PATH", "mpi", "" (None).
// Throws std::runtime_error with a one-line message on anything else.
Rendezvous parse_rendezvous(const std::string& spec);
// The spec back ("tcp://node1:29501", "file:/shared/id", "mpi", "none"), for messages.
std::string rendezvous_spec(const Rendezvous& r);

// When --rendezvous is not given: mpirun -> mpi; torchrun -> tcp://MASTER_ADDR:(MASTER_PORT+1); srun ->
// tcp://MASTER_ADDR:MASTER_PORT when both are set; single, or any world of one -> None. Throws a one-line
// error telling to pass --rendezvous when nothing applies (e.g. srun without MASTER_ADDR).
Rendezvous default_rendezvous(const LaunchInfo& li, const EnvFn& env);

// Rank 0's `bytes` bytes at `data` reach every rank's `data`. Every rank calls it. All waits together are
// bounded by timeout_s (for mpi the MPI library bounds them: mpirun starts and aborts all ranks together).
// Throws std::runtime_error with one line naming the rendezvous and the rank, e.g.
// "rendezvous tcp://node1:29501: rank 1 could not reach rank 0 within 60 s (Connection refused)".
void bootstrap_broadcast(const Rendezvous& r, int rank, int world_size, void* data, size_t bytes,
                         double timeout_s);

// After every rank has joined (the caller runs a collective first): rank 0 removes a file rendezvous' file so
// the next run cannot read a stale id (a failure is only a warning on stderr). No-op otherwise.
void cleanup_rendezvous(const Rendezvous& r, int rank);

// The mpi path with the library's symbols looked up through `sym` (dlsym on the loaded library; tests pass
// fakes). Open MPI when "ompi_mpi_comm_world" resolves (handles are pointers to ompi_mpi_comm_world /
// ompi_mpi_byte), else the MPICH ABI (int handles). MPI_Init, MPI_Bcast from rank 0, MPI_Finalize.
void mpi_broadcast_with(const std::function<void*(const char*)>& sym, void* data, size_t bytes);
