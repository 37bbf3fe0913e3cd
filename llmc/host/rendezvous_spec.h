// The --rendezvous flag's value: how rank 0's NCCL id travels to the other ranks (llmc/parallel/rendezvous.h
// performs the exchange). Kept beside the configuration so that validate() can check the flag's syntax.
//   tcp://HOST:PORT  rank 0 listens on PORT (all IPv4 addresses), the others connect to HOST.
//   file:PATH        rank 0 writes PATH on a filesystem every rank sees; the others poll for it.
//   mpi              MPI_Bcast through the MPI library loaded at run time.
// Host-only.
#pragma once
#include <string>

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
