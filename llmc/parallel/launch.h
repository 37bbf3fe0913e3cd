// Rank start-up: which launcher started this process (rank, world size, local rank), and the rendezvous
// its environment implies when --rendezvous is not given (llmc/parallel/rendezvous.h performs it).
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
// Host-only.
#pragma once
#include <functional>
#include <string>

#include "llmc/host/rendezvous_spec.h"

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

// When --rendezvous is not given: mpirun -> mpi; torchrun -> tcp://MASTER_ADDR:(MASTER_PORT+1); srun ->
// tcp://MASTER_ADDR:MASTER_PORT when both are set; single, or any world of one -> None. Throws a one-line
// error telling to pass --rendezvous when nothing applies (e.g. srun without MASTER_ADDR).
Rendezvous default_rendezvous(const LaunchInfo& li, const EnvFn& env);
