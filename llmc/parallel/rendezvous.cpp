#include "llmc/parallel/rendezvous.h"

#include <arpa/inet.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <climits>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <thread>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;

[[noreturn]] void fail(const std::string& msg) { throw std::runtime_error(msg); }

std::string errno_text(int err) { return strerror(err); }

// "60 s", "0.5 s"
std::string seconds_text(double s) {
    char buf[32];
    snprintf(buf, sizeof buf, "%g s", s);
    return buf;
}

// ---- sockets ----

// Closes on scope exit.
struct Fd {
    int fd = -1;
    explicit Fd(int f = -1) : fd(f) {}
    ~Fd() {
        if (fd >= 0) close(fd);
    }
    Fd(Fd&& o) noexcept : fd(o.fd) { o.fd = -1; }
    Fd& operator=(Fd&& o) noexcept {
        if (this != &o) {
            if (fd >= 0) close(fd);
            fd = o.fd;
            o.fd = -1;
        }
        return *this;
    }
    Fd(const Fd&) = delete;
    Fd& operator=(const Fd&) = delete;
};

// Milliseconds left until `deadline` for poll(), at least 0.
int ms_left(Clock::time_point deadline) {
    const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
    return ms <= 0 ? 0 : (int)std::min<long long>(ms, INT_MAX);
}

// Waits for `events` on a non-blocking socket; false on timeout.
bool wait_fd(int fd, short events, Clock::time_point deadline) {
    for (;;) {
        pollfd p{fd, events, 0};
        const int n = poll(&p, 1, ms_left(deadline));
        if (n > 0) return true;
        if (n == 0) return false;
        if (errno != EINTR) return false;
    }
}

// Reads up to n bytes before the deadline; returns how many arrived (< n: EOF, error or timeout, in *err).
size_t recv_all(int fd, void* buf, size_t n, Clock::time_point deadline, std::string* err) {
    size_t got = 0;
    while (got < n) {
        const ssize_t r = recv(fd, (char*)buf + got, n - got, 0);
        if (r > 0) {
            got += (size_t)r;
        } else if (r == 0) {
            *err = "connection closed";
            break;
        } else if (errno == EINTR) {
            continue;
        } else if (errno == EAGAIN || errno == EWOULDBLOCK) {
            if (!wait_fd(fd, POLLIN, deadline)) {
                *err = "timed out";
                break;
            }
        } else {
            *err = errno_text(errno);
            break;
        }
    }
    return got;
}

// Sends all n bytes before the deadline; MSG_NOSIGNAL: a peer that went away is an error, not SIGPIPE.
bool send_all(int fd, const void* buf, size_t n, Clock::time_point deadline, std::string* err) {
    size_t sent = 0;
    while (sent < n) {
        const ssize_t r = send(fd, (const char*)buf + sent, n - sent, MSG_NOSIGNAL);
        if (r > 0) {
            sent += (size_t)r;
        } else if (r < 0 && errno == EINTR) {
            continue;
        } else if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            if (!wait_fd(fd, POLLOUT, deadline)) {
                *err = "timed out";
                return false;
            }
        } else {
            *err = errno_text(errno);
            return false;
        }
    }
    return true;
}

std::string peer_name(const sockaddr_in& a) {
    char buf[INET_ADDRSTRLEN] = "?";
    inet_ntop(AF_INET, &a.sin_addr, buf, sizeof buf);
    return std::string(buf) + ":" + std::to_string(ntohs(a.sin_port));
}

// Rank 0's listening socket on PORT. Any address, not HOST's: a host name often maps to a loopback address
// in /etc/hosts on its own machine.
Fd listen_on(const Rendezvous& r, const std::string& where) {
    Fd listener(socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
    if (listener.fd < 0) fail(where + ": rank 0 could not create a socket (" + errno_text(errno) + ")");
    const int one = 1;
    setsockopt(listener.fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);  // a previous run's TIME_WAIT
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_ANY);
    addr.sin_port = htons((uint16_t)r.port);
    if (bind(listener.fd, (const sockaddr*)&addr, sizeof addr) != 0)
        fail(where + ": rank 0 could not listen on port " + std::to_string(r.port) + " (" +
             errno_text(errno) + ")");
    if (listen(listener.fd, SOMAXCONN) != 0)
        fail(where + ": rank 0 could not listen on port " + std::to_string(r.port) + " (" +
             errno_text(errno) + ")");
    return listener;
}

// A connection that has not sent its 4-byte rank yet.
struct PendingRank {
    Fd fd;
    std::string from;
    unsigned char buf[4];
    size_t got = 0;
};

// The other ranks that have said who they are: a socket and an address per rank (index = rank).
struct JoinedRanks {
    explicit JoinedRanks(int world_size) : peers(world_size), from(world_size) {}
    std::vector<Fd> peers;
    std::vector<std::string> from;
    int count = 0;
};

[[noreturn]] void fail_missing_ranks(const JoinedRanks& joined, int world_size, const std::string& where,
                                     double timeout_s) {
    std::string missing;
    int shown = 0;
    for (int i = 1; i < world_size && shown < 8; i++)
        if (joined.peers[i].fd < 0) missing += (shown++ ? ", " : "") + std::to_string(i);
    if (world_size - 1 - joined.count > shown) missing += ", ...";
    fail(where + ": rank 0 heard from " + std::to_string(joined.count) + " of " +
         std::to_string(world_size - 1) + " other ranks within " + seconds_text(timeout_s) +
         " (missing: " + missing + ")");
}

// Reads the pending connections that poll found ready (fds[i + 1] is pending[i]); one that has sent its
// whole rank joins, one that closes first (not one of ours: a port scan) is forgotten.
void read_pending_ranks(std::vector<PendingRank>* pending, std::vector<pollfd>* fds, JoinedRanks* joined,
                        int world_size, const std::string& where) {
    for (size_t i = 0; i < pending->size();) {
        if (!((*fds)[i + 1].revents & (POLLIN | POLLHUP | POLLERR))) {
            i++;
            continue;
        }
        PendingRank& p = (*pending)[i];
        const ssize_t got = recv(p.fd.fd, p.buf + p.got, 4 - p.got, 0);
        if (got < 0 && (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK)) {
            i++;
            continue;
        }
        if (got > 0) p.got += (size_t)got;
        if (got > 0 && p.got < 4) {
            i++;
            continue;
        }
        if (got > 0) {
            uint32_t be;
            memcpy(&be, p.buf, 4);
            const int peer = (int)ntohl(be);
            if (peer < 1 || peer >= world_size)
                fail(where + ": rank 0 got rank " + std::to_string(peer) + " from " + p.from +
                     " (expected 1.." + std::to_string(world_size - 1) + ")");
            if (joined->peers[peer].fd >= 0)
                fail(where + ": rank " + std::to_string(peer) + " joined twice (from " + joined->from[peer] +
                     " and " + p.from + "; another run on the same port?)");
            joined->peers[peer] = std::move(p.fd);
            joined->from[peer] = p.from;
            joined->count++;
        }
        pending->erase(pending->begin() + i);
        fds->erase(fds->begin() + i + 1);
    }
}

void tcp_rank0(const Rendezvous& r, const std::string& where, int world_size, const void* data, size_t bytes,
               Clock::time_point deadline, double timeout_s) {
    Fd listener = listen_on(r, where);
    // Connections that have not sent their rank yet are polled with the listener, so that a silent
    // connection cannot hold up the others.
    std::vector<PendingRank> pending;
    JoinedRanks joined(world_size);
    while (joined.count < world_size - 1) {
        std::vector<pollfd> fds{{listener.fd, POLLIN, 0}};
        for (const PendingRank& p : pending) fds.push_back({p.fd.fd, POLLIN, 0});
        const int n = poll(fds.data(), fds.size(), ms_left(deadline));
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) fail(where + ": rank 0: poll failed (" + errno_text(errno) + ")");
        if (n == 0) fail_missing_ranks(joined, world_size, where, timeout_s);
        read_pending_ranks(&pending, &fds, &joined, world_size, where);  // first: the vector grows below
        if (fds[0].revents & POLLIN) {
            for (;;) {  // drain the backlog
                sockaddr_in from{};
                socklen_t len = sizeof from;
                const int c = accept4(listener.fd, (sockaddr*)&from, &len, SOCK_NONBLOCK | SOCK_CLOEXEC);
                if (c < 0) break;  // EAGAIN, or a connection that went away meanwhile
                pending.push_back(PendingRank{Fd(c), peer_name(from), {}, 0});
            }
        }
    }
    // Everyone is here: only now send, so that on an error above no rank gets an id to a run that will not
    // start.
    for (int i = 1; i < world_size; i++) {
        std::string err;
        if (!send_all(joined.peers[i].fd, data, bytes, deadline, &err))
            fail(where + ": rank 0 could not send the id to rank " + std::to_string(i) + " at " +
                 joined.from[i] + " (" + err + ")");
    }
}

// Connects to host:port before the deadline (non-blocking connect: an unreachable host must not block for the
// kernel's ~2 minutes of SYN retries). Returns -1 and the reason in *err.
int try_connect(const std::string& host, int port, Clock::time_point deadline, std::string* err) {
    addrinfo hints{};
    hints.ai_family = AF_INET;
    hints.ai_socktype = SOCK_STREAM;
    addrinfo* res = nullptr;
    const int gai = getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &res);
    if (gai != 0) {
        *err = std::string("cannot resolve ") + host + ": " + gai_strerror(gai);
        return -1;
    }
    int result = -1;
    for (addrinfo* a = res; a && result < 0; a = a->ai_next) {
        Fd s(socket(a->ai_family, a->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, a->ai_protocol));
        if (s.fd < 0) {
            *err = errno_text(errno);
            continue;
        }
        int rc = connect(s.fd, a->ai_addr, a->ai_addrlen);
        if (rc != 0 && errno == EINPROGRESS) {
            if (!wait_fd(s.fd, POLLOUT, deadline)) {
                *err = "connect timed out";
                continue;
            }
            int so_error = 0;
            socklen_t len = sizeof so_error;
            getsockopt(s.fd, SOL_SOCKET, SO_ERROR, &so_error, &len);
            rc = so_error ? -1 : 0;
            errno = so_error;
        }
        if (rc != 0) {
            *err = errno_text(errno);
            continue;
        }
        if (drop_self_connection(s.fd)) {
            *err = "connected to itself: nothing listens on the port yet";
            continue;
        }
        result = s.fd;
        s.fd = -1;
    }
    freeaddrinfo(res);
    return result;
}

void tcp_peer(const Rendezvous& r, const std::string& where, int rank, void* data, size_t bytes,
              Clock::time_point deadline, double timeout_s) {
    const std::string who = where + ": rank " + std::to_string(rank);
    std::string err;
    Fd s;
    for (;;) {  // rank 0 may start later: refused (or not resolvable yet) is retried until the deadline
        s = Fd(try_connect(r.host, r.port, deadline, &err));
        if (s.fd >= 0) break;
        if (Clock::now() + std::chrono::milliseconds(100) >= deadline)
            fail(who + " could not reach rank 0 within " + seconds_text(timeout_s) + " (" + err + ")");
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    const uint32_t be = htonl((uint32_t)rank);
    if (!send_all(s.fd, &be, 4, deadline, &err))
        fail(who + " could not send its rank to rank 0 (" + err + ")");
    const size_t got = recv_all(s.fd, data, bytes, deadline, &err);
    if (got != bytes)
        fail(who + " got " + std::to_string(got) + " of " + std::to_string(bytes) +
             " bytes from rank 0 within " + seconds_text(timeout_s) + " (" + err + ")");
}

// ---- file ----

void file_rank0(const Rendezvous& r, const std::string& where, const void* data, size_t bytes) {
    // Written aside and renamed: a reader sees either no file or the whole id, never a partial one.
    const std::string tmp = r.path + ".tmp." + std::to_string(getpid());
    Fd f(open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644));
    if (f.fd < 0) fail(where + ": rank 0 could not create " + tmp + " (" + errno_text(errno) + ")");
    size_t done = 0;
    while (done < bytes) {
        const ssize_t w = write(f.fd, (const char*)data + done, bytes - done);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) {
            const std::string e = errno_text(errno);
            unlink(tmp.c_str());
            fail(where + ": rank 0 could not write " + tmp + " (" + e + ")");
        }
        done += (size_t)w;
    }
    const bool synced = fsync(f.fd) == 0;  // before the rename: a crash must not leave an empty PATH
    const int sync_errno = errno;
    const bool closed = close(f.fd) == 0;
    f.fd = -1;
    if (!synced || !closed) {
        const std::string e = errno_text(synced ? errno : sync_errno);
        unlink(tmp.c_str());
        fail(where + ": rank 0 could not write " + tmp + " (" + e + ")");
    }
    if (rename(tmp.c_str(), r.path.c_str()) != 0) {
        const std::string e = errno_text(errno);
        unlink(tmp.c_str());
        fail(where + ": rank 0 could not rename " + tmp + " to " + r.path + " (" + e + ")");
    }
}

void file_peer(const Rendezvous& r, const std::string& where, int rank, void* data, size_t bytes,
               Clock::time_point deadline, double timeout_s) {
    std::string last = "no file";
    for (;;) {
        struct stat st;
        if (stat(r.path.c_str(), &st) != 0) {
            last = "no file";
        } else if ((size_t)st.st_size != bytes) {
            last = "it has " + std::to_string((long long)st.st_size) + " bytes, expected " +
                   std::to_string(bytes);
        } else {
            Fd f(open(r.path.c_str(), O_RDONLY | O_CLOEXEC));
            size_t got = 0;
            while (f.fd >= 0 && got < bytes) {
                const ssize_t n = read(f.fd, (char*)data + got, bytes - got);
                if (n < 0 && errno == EINTR) continue;
                if (n <= 0) break;
                got += (size_t)n;
            }
            if (got == bytes) return;
            last = f.fd < 0 ? errno_text(errno) : "short read";  // replaced meanwhile: look again
        }
        if (Clock::now() + std::chrono::milliseconds(50) >= deadline)
            fail(where + ": rank " + std::to_string(rank) + " did not get the id from rank 0 within " +
                 seconds_text(timeout_s) + " (" + r.path + ": " + last + ")");
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
}

// ---- mpi ----

const char* const kMpiLibs[] = {"libmpi.so.40", "libmpi.so", "libmpi.so.12"};  // Open MPI, any, MPICH/Intel

void mpi_broadcast(void* data, size_t bytes) {
    void* lib = nullptr;
    std::string tried;
    for (const char* name : kMpiLibs) {
        // RTLD_GLOBAL: Open MPI's own plugins (dlopened by it) resolve MPI symbols from the global scope.
        lib = dlopen(name, RTLD_NOW | RTLD_GLOBAL);
        if (lib) break;
        const char* e = dlerror();
        tried += std::string(tried.empty() ? "" : "; ") + (e ? e : name);
    }
    if (!lib) fail("rendezvous mpi: could not load an MPI library (" + tried + ")");
    // Never dlclose: MPI libraries do not support being unloaded.
    mpi_broadcast_with([lib](const char* s) { return dlsym(lib, s); }, data, bytes);
}

}  // namespace

bool drop_self_connection(int fd) {
    sockaddr_storage self{}, peer{};
    socklen_t self_len = sizeof self, peer_len = sizeof peer;
    if (getsockname(fd, (sockaddr*)&self, &self_len) != 0 ||
        getpeername(fd, (sockaddr*)&peer, &peer_len) != 0)
        return false;
    if (self_len != peer_len || memcmp(&self, &peer, self_len) != 0) return false;
    const linger reset = {1, 0};  // close sends a reset: no state left behind on the port
    setsockopt(fd, SOL_SOCKET, SO_LINGER, &reset, sizeof reset);
    return true;
}

void bootstrap_broadcast(const Rendezvous& r, int rank, int world_size, void* data, size_t bytes,
                         double timeout_s) {
    const std::string where = "rendezvous " + rendezvous_spec(r);
    if (world_size < 1 || rank < 0 || rank >= world_size)
        fail(where + ": rank " + std::to_string(rank) + " is outside [0, " + std::to_string(world_size) +
             ")");
    if (world_size == 1) return;
    const auto deadline =
        Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(timeout_s));
    switch (r.kind) {
        case Rendezvous::Kind::None:
            fail("no rendezvous for " + std::to_string(world_size) +
                 " ranks: pass --rendezvous tcp://HOST:PORT, file:PATH or mpi");
        case Rendezvous::Kind::Tcp:
            if (rank == 0)
                tcp_rank0(r, where, world_size, data, bytes, deadline, timeout_s);
            else
                tcp_peer(r, where, rank, data, bytes, deadline, timeout_s);
            return;
        case Rendezvous::Kind::File:
            if (rank == 0)
                file_rank0(r, where, data, bytes);
            else
                file_peer(r, where, rank, data, bytes, deadline, timeout_s);
            return;
        case Rendezvous::Kind::Mpi:
            mpi_broadcast(data, bytes);
            return;
    }
}

void cleanup_rendezvous(const Rendezvous& r, int rank) {
    if (r.kind != Rendezvous::Kind::File || rank != 0) return;
    // Training can go on without it; the next run would only risk a stale id, so warn instead of failing.
    if (unlink(r.path.c_str()) != 0 && errno != ENOENT)
        fprintf(stderr, "warning: rendezvous file:%s: could not remove it (%s)\n", r.path.c_str(),
                strerror(errno));
}

void mpi_broadcast_with(const std::function<void*(const char*)>& sym, void* data, size_t bytes) {
    if (bytes > (size_t)INT_MAX)
        fail("rendezvous mpi: " + std::to_string(bytes) + " bytes is too many for MPI");
    const auto need = [&](const char* name) {
        void* p = sym(name);
        if (!p) fail(std::string("rendezvous mpi: the MPI library has no ") + name);
        return p;
    };
    using InitFn = int (*)(int*, char***);
    using FinalizeFn = int (*)();
    using FlagFn = int (*)(int*);
    const auto init = (InitFn)need("MPI_Init");
    const auto finalize = (FinalizeFn)need("MPI_Finalize");
    void* bcast = need("MPI_Bcast");
    const auto check = [](int rc, const char* what) {
        if (rc != 0)
            fail(std::string("rendezvous mpi: ") + what + " failed (MPI error " + std::to_string(rc) + ")");
    };
    // Someone (a profiler, a wrapper) may have initialized MPI already: then leave init and finalize to them.
    int already = 0;
    if (auto initialized = (FlagFn)sym("MPI_Initialized")) check(initialized(&already), "MPI_Initialized");
    if (!already) check(init(nullptr, nullptr), "MPI_Init");
    // MPI_COMM_WORLD / MPI_BYTE are macros in mpi.h, so their values depend on the implementation's ABI.
    if (void* comm = sym("ompi_mpi_comm_world")) {  // Open MPI: handles are pointers to predefined objects
        void* byte = need("ompi_mpi_byte");
        using BcastFn = int (*)(void*, int, void*, int, void*);
        check(((BcastFn)bcast)(data, (int)bytes, byte, 0, comm), "MPI_Bcast");
    } else {  // MPICH ABI (MPICH, Intel MPI, MVAPICH, Cray MPICH): handles are ints
        using BcastFn = int (*)(void*, int, int, int, int);
        const int kCommWorld = 0x44000000, kByte = 0x4c00010d;
        check(((BcastFn)bcast)(data, (int)bytes, kByte, 0, kCommWorld), "MPI_Bcast");
    }
    // NCCL does the rest; nothing else in the process uses MPI.
    if (!already) check(finalize(), "MPI_Finalize");
}
