// Host tests for llmc/parallel/launch and rendezvous (and llmc/host/rendezvous_spec): launcher detection
// from injected environments (each launcher, precedence, errors), rendezvous parsing and defaults, the id
// exchange over tcp and file with ranks as threads (rank 0 starting last), timeouts with one-line errors, and
// the mpi path against fake MPI symbols (both handle ABIs).
#include <arpa/inet.h>
#include <dirent.h>
#include <dlfcn.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <map>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "llmc/parallel/launch.h"
#include "llmc/parallel/rendezvous.h"
#include "test/temp_dir.h"
#include "test/testing.h"

using testing::error_of;

namespace {

using testing::TempDir;
using Env = std::map<std::string, std::string>;
using Kind = Rendezvous::Kind;

EnvFn env_of(const Env& vars) {
    return [&vars](const char* name) -> const char* {
        auto it = vars.find(name);
        return it == vars.end() ? nullptr : it->second.c_str();
    };
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// A TCP port that was free a moment ago (bound as port 0, then released).
int free_port() {
    const int s = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = 0;
    socklen_t len = sizeof a;
    if (s < 0 || bind(s, (sockaddr*)&a, sizeof a) != 0 || getsockname(s, (sockaddr*)&a, &len) != 0) {
        perror("free_port");
        exit(1);
    }
    close(s);
    return ntohs(a.sin_port);
}

std::vector<unsigned char> random_bytes(size_t n) {
    std::mt19937_64 rng(std::random_device{}());
    std::vector<unsigned char> v(n);
    for (auto& b : v) b = (unsigned char)rng();
    return v;
}

// Runs bootstrap_broadcast for `ranks` of a world of `world` ranks as threads, rank 0 (if among them) after
// `rank0_delay_ms`. Returns each rank's buffer and error ("" if none); rank 0's buffer starts as `id`, the
// others' as zeros.
struct Outcome {
    std::vector<std::vector<unsigned char>> data;
    std::vector<std::string> error;
};
Outcome run_ranks(const Rendezvous& r, int world, const std::vector<int>& ranks,
                  const std::vector<unsigned char>& id, int rank0_delay_ms, double timeout_s) {
    Outcome out;
    out.data.assign(world, std::vector<unsigned char>(id.size(), 0));
    out.error.assign(world, "");
    out.data[0] = id;
    std::vector<std::thread> threads;
    for (int rank : ranks) {
        threads.emplace_back([&, rank] {
            if (rank == 0) std::this_thread::sleep_for(std::chrono::milliseconds(rank0_delay_ms));
            out.error[rank] = error_of(
                [&] { bootstrap_broadcast(r, rank, world, out.data[rank].data(), id.size(), timeout_s); });
        });
    }
    for (auto& t : threads) t.join();
    return out;
}

// Fake MPI: records what the code under test passed.
struct FakeMpi {
    int init_calls = 0, finalize_calls = 0, bcast_calls = 0;
    int count = -1, root = -1, rc = 0;
    void* ompi_type = nullptr;
    void* ompi_comm = nullptr;
    int mpich_type = 0, mpich_comm = 0;
    void* data = nullptr;
};
FakeMpi fake;
char fake_ompi_comm_world, fake_ompi_byte;  // stand-ins for Open MPI's predefined objects

extern "C" int fake_init(int* argc, char*** argv) {
    fake.init_calls++;
    return argc == nullptr && argv == nullptr ? 0 : 1;
}
extern "C" int fake_finalize() {
    fake.finalize_calls++;
    return 0;
}
extern "C" int fake_bcast_ompi(void* data, int count, void* type, int root, void* comm) {
    fake.bcast_calls++;
    fake.data = data;
    fake.count = count;
    fake.ompi_type = type;
    fake.root = root;
    fake.ompi_comm = comm;
    memset(data, 0xab, (size_t)count);
    return fake.rc;
}
extern "C" int fake_bcast_mpich(void* data, int count, int type, int root, int comm) {
    fake.bcast_calls++;
    fake.data = data;
    fake.count = count;
    fake.mpich_type = type;
    fake.root = root;
    fake.mpich_comm = comm;
    memset(data, 0xcd, (size_t)count);
    return fake.rc;
}

std::function<void*(const char*)> fake_symbols(bool ompi, bool with_init = true) {
    return [=](const char* name) -> void* {
        const std::string n = name;
        if (n == "MPI_Init") return with_init ? (void*)&fake_init : nullptr;
        if (n == "MPI_Finalize") return (void*)&fake_finalize;
        if (n == "MPI_Bcast") return ompi ? (void*)&fake_bcast_ompi : (void*)&fake_bcast_mpich;
        if (ompi && n == "ompi_mpi_comm_world") return &fake_ompi_comm_world;
        if (ompi && n == "ompi_mpi_byte") return &fake_ompi_byte;
        return nullptr;
    };
}

}  // namespace

// ---- detect_launch ----

TEST(detect_each_launcher) {
    Env none;
    LaunchInfo li = detect_launch(env_of(none));
    EXPECT_TRUE(li.launcher == "single");
    EXPECT_EQ(li.rank, 0);
    EXPECT_EQ(li.world_size, 1);
    EXPECT_EQ(li.local_rank, 0);

    Env ompi{
        {"OMPI_COMM_WORLD_RANK", "5"}, {"OMPI_COMM_WORLD_SIZE", "8"}, {"OMPI_COMM_WORLD_LOCAL_RANK", "1"}};
    li = detect_launch(env_of(ompi));
    EXPECT_TRUE(li.launcher == "mpirun");
    EXPECT_EQ(li.rank, 5);
    EXPECT_EQ(li.world_size, 8);
    EXPECT_EQ(li.local_rank, 1);

    Env pmi{{"PMI_RANK", "3"}, {"PMI_SIZE", "4"}};
    li = detect_launch(env_of(pmi));
    EXPECT_TRUE(li.launcher == "mpirun");
    EXPECT_EQ(li.rank, 3);
    EXPECT_EQ(li.world_size, 4);
    EXPECT_EQ(li.local_rank, 0);  // no MPI_LOCALRANKID
    pmi["MPI_LOCALRANKID"] = "2";
    EXPECT_EQ(detect_launch(env_of(pmi)).local_rank, 2);

    Env torch{{"RANK", "6"}, {"WORLD_SIZE", "16"}, {"LOCAL_RANK", "6"}};
    li = detect_launch(env_of(torch));
    EXPECT_TRUE(li.launcher == "torchrun");
    EXPECT_EQ(li.rank, 6);
    EXPECT_EQ(li.world_size, 16);
    EXPECT_EQ(li.local_rank, 6);

    Env slurm{{"SLURM_PROCID", "9"}, {"SLURM_NTASKS", "12"}, {"SLURM_LOCALID", "3"}};
    li = detect_launch(env_of(slurm));
    EXPECT_TRUE(li.launcher == "srun");
    EXPECT_EQ(li.rank, 9);
    EXPECT_EQ(li.world_size, 12);
    EXPECT_EQ(li.local_rank, 3);
}

TEST(detect_precedence) {
    // torchrun inside a Slurm job: one Slurm task per node, torchrun's ranks are the real ones.
    Env both{{"RANK", "7"},         {"WORLD_SIZE", "16"},  {"LOCAL_RANK", "3"},
             {"SLURM_PROCID", "1"}, {"SLURM_NTASKS", "2"}, {"SLURM_LOCALID", "0"}};
    LaunchInfo li = detect_launch(env_of(both));
    EXPECT_TRUE(li.launcher == "torchrun");
    EXPECT_EQ(li.rank, 7);
    EXPECT_EQ(li.world_size, 16);
    EXPECT_EQ(li.local_rank, 3);
    // mpirun inside a Slurm allocation: Open MPI's variables win.
    Env mpi{{"OMPI_COMM_WORLD_RANK", "2"}, {"OMPI_COMM_WORLD_SIZE", "4"}, {"OMPI_COMM_WORLD_LOCAL_RANK", "2"},
            {"SLURM_PROCID", "0"},         {"SLURM_NTASKS", "1"},         {"SLURM_LOCALID", "0"}};
    li = detect_launch(env_of(mpi));
    EXPECT_TRUE(li.launcher == "mpirun");
    EXPECT_EQ(li.rank, 2);
}

TEST(detect_errors) {
    Env bad{{"RANK", "x1"}, {"WORLD_SIZE", "4"}, {"LOCAL_RANK", "0"}};
    std::string e = error_of([&] { detect_launch(env_of(bad)); });
    EXPECT_CONTAINS(e, "RANK='x1' is not an integer");
    bad = {{"RANK", "1"}, {"WORLD_SIZE", "4 "}, {"LOCAL_RANK", "0"}};
    EXPECT_CONTAINS(error_of([&] { detect_launch(env_of(bad)); }), "WORLD_SIZE");
    bad = {{"RANK", "1"}, {"WORLD_SIZE", ""}, {"LOCAL_RANK", "0"}};
    EXPECT_CONTAINS(error_of([&] { detect_launch(env_of(bad)); }), "WORLD_SIZE='' is not an integer");
    bad = {{"SLURM_PROCID", "99999999999"}, {"SLURM_NTASKS", "2"}, {"SLURM_LOCALID", "0"}};
    EXPECT_CONTAINS(error_of([&] { detect_launch(env_of(bad)); }), "SLURM_PROCID");

    Env out{{"RANK", "4"}, {"WORLD_SIZE", "4"}, {"LOCAL_RANK", "0"}};
    e = error_of([&] { detect_launch(env_of(out)); });
    EXPECT_CONTAINS(e, "RANK=4 is outside [0, WORLD_SIZE=4)");
    out = {{"PMI_RANK", "-1"}, {"PMI_SIZE", "4"}};
    EXPECT_CONTAINS(error_of([&] { detect_launch(env_of(out)); }), "PMI_RANK=-1");
    out = {{"OMPI_COMM_WORLD_RANK", "0"}, {"OMPI_COMM_WORLD_SIZE", "0"}, {"OMPI_COMM_WORLD_LOCAL_RANK", "0"}};
    EXPECT_CONTAINS(error_of([&] { detect_launch(env_of(out)); }), "OMPI_COMM_WORLD_SIZE=0");
    out = {{"SLURM_PROCID", "0"}, {"SLURM_NTASKS", "2"}, {"SLURM_LOCALID", "-2"}};
    EXPECT_CONTAINS(error_of([&] { detect_launch(env_of(out)); }), "SLURM_LOCALID=-2");

    Env partial{{"RANK", "0"}, {"LOCAL_RANK", "0"}};
    e = error_of([&] { detect_launch(env_of(partial)); });
    EXPECT_CONTAINS(e, "WORLD_SIZE");
    EXPECT_CONTAINS(e, "torchrun");
    partial = {{"PMI_SIZE", "2"}};
    EXPECT_CONTAINS(error_of([&] { detect_launch(env_of(partial)); }), "PMI_RANK");
    partial = {{"SLURM_PROCID", "0"}, {"SLURM_NTASKS", "2"}};
    EXPECT_CONTAINS(error_of([&] { detect_launch(env_of(partial)); }), "SLURM_LOCALID");
    EXPECT_TRUE(e.find('\n') == std::string::npos);  // one line
}

// ---- parse_rendezvous / default_rendezvous ----

TEST(parse_good_specs) {
    Rendezvous r = parse_rendezvous("tcp://node1:29501");
    EXPECT_TRUE(r.kind == Kind::Tcp && r.host == "node1");
    EXPECT_EQ(r.port, 29501);
    r = parse_rendezvous("tcp://10.1.2.3:1");
    EXPECT_TRUE(r.kind == Kind::Tcp && r.host == "10.1.2.3");
    EXPECT_EQ(r.port, 1);
    EXPECT_EQ(parse_rendezvous("tcp://gpu-07.cluster.local:65535").port, 65535);
    r = parse_rendezvous("file:/shared/run1/nccl_id");
    EXPECT_TRUE(r.kind == Kind::File && r.path == "/shared/run1/nccl_id");
    EXPECT_TRUE(parse_rendezvous("file:rel/id").path == "rel/id");
    EXPECT_TRUE(parse_rendezvous("mpi").kind == Kind::Mpi);
    EXPECT_TRUE(parse_rendezvous("").kind == Kind::None);
    for (const char* spec : {"tcp://node1:29501", "file:/a/b", "mpi"})
        EXPECT_TRUE(rendezvous_spec(parse_rendezvous(spec)) == spec);
}

TEST(parse_bad_specs) {
    for (const char* spec : {"tcp://node1", "tcp://node1:", "tcp://node1:0", "tcp://node1:70000",
                             "tcp://:29500", "tcp://node1:29x", "tcp://[::1]:29500", "udp://node1:29500",
                             "node1:29500", "file:", "MPI", "mpi:"}) {
        const std::string e = error_of([&] { parse_rendezvous(spec); });
        EXPECT_CONTAINS(e, std::string("'") + spec + "'");
        EXPECT_TRUE(e.find('\n') == std::string::npos);
    }
    EXPECT_CONTAINS(error_of([] { parse_rendezvous("tcp://node1:0"); }), "1..65535");
    EXPECT_CONTAINS(error_of([] { parse_rendezvous("file:"); }), "no path");
}

TEST(default_rendezvous_each_launcher) {
    Env env{{"MASTER_ADDR", "node1"}, {"MASTER_PORT", "29500"}};
    LaunchInfo li;
    li.world_size = 8;
    li.rank = 3;

    li.launcher = "torchrun";  // torchrun's store has MASTER_PORT
    Rendezvous r = default_rendezvous(li, env_of(env));
    EXPECT_TRUE(r.kind == Kind::Tcp && r.host == "node1");
    EXPECT_EQ(r.port, 29501);

    li.launcher = "srun";
    r = default_rendezvous(li, env_of(env));
    EXPECT_TRUE(r.kind == Kind::Tcp && r.host == "node1");
    EXPECT_EQ(r.port, 29500);

    li.launcher = "mpirun";
    EXPECT_TRUE(default_rendezvous(li, env_of(env)).kind == Kind::Mpi);

    LaunchInfo single;
    single.launcher = "single";
    EXPECT_TRUE(default_rendezvous(single, env_of(env)).kind == Kind::None);
    // A world of one has nothing to exchange, whatever started it (srun -n1 without MASTER_ADDR included).
    Env empty;
    LaunchInfo one;
    one.launcher = "srun";
    EXPECT_TRUE(default_rendezvous(one, env_of(empty)).kind == Kind::None);
}

TEST(default_rendezvous_errors) {
    LaunchInfo li;
    li.world_size = 2;
    li.launcher = "srun";
    Env only_port{{"MASTER_PORT", "29500"}};
    std::string e = error_of([&] { default_rendezvous(li, env_of(only_port)); });
    EXPECT_CONTAINS(e, "MASTER_ADDR");
    EXPECT_CONTAINS(e, "--rendezvous");
    Env only_addr{{"MASTER_ADDR", "node1"}};
    EXPECT_CONTAINS(error_of([&] { default_rendezvous(li, env_of(only_addr)); }), "--rendezvous");
    li.launcher = "torchrun";
    Env bad_port{{"MASTER_ADDR", "node1"}, {"MASTER_PORT", "http"}};
    EXPECT_CONTAINS(error_of([&] { default_rendezvous(li, env_of(bad_port)); }), "MASTER_PORT='http'");
    Env last_port{{"MASTER_ADDR", "node1"}, {"MASTER_PORT", "65535"}};
    EXPECT_CONTAINS(error_of([&] { default_rendezvous(li, env_of(last_port)); }), "MASTER_PORT");
}

// ---- bootstrap_broadcast ----

TEST(tcp_four_ranks_rank0_last) {
    const int port = free_port();
    const Rendezvous r = parse_rendezvous("tcp://127.0.0.1:" + std::to_string(port));
    const std::vector<unsigned char> id = random_bytes(128);
    const auto t0 = std::chrono::steady_clock::now();
    Outcome out = run_ranks(r, 4, {0, 1, 2, 3}, id, 300, 10.0);
    const double took = seconds_since(t0);
    for (int rank = 0; rank < 4; rank++) {
        EXPECT_CONTAINS("rank " + std::to_string(rank) + " error: '" + out.error[rank] + "'", "error: ''");
        EXPECT_TRUE(out.data[rank] == id);
    }
    EXPECT_TRUE(took >= 0.29 && took < 5.0);  // the others waited for rank 0 (refused, retried)
    // The port is free again right away (SO_REUSEADDR): a second exchange on it works.
    const std::vector<unsigned char> id2 = random_bytes(128);
    out = run_ranks(r, 4, {0, 1, 2, 3}, id2, 50, 10.0);
    for (int rank = 0; rank < 4; rank++) {
        EXPECT_TRUE(out.error[rank].empty());
        EXPECT_TRUE(out.data[rank] == id2);
    }
}

TEST(tcp_localhost_name) {
    const Rendezvous r = parse_rendezvous("tcp://localhost:" + std::to_string(free_port()));
    const std::vector<unsigned char> id = random_bytes(128);
    Outcome out = run_ranks(r, 2, {0, 1}, id, 100, 10.0);
    EXPECT_TRUE(out.error[0].empty() && out.error[1].empty());
    EXPECT_TRUE(out.data[1] == id);
}

TEST(tcp_timeout_nobody_listening) {
    const Rendezvous r = parse_rendezvous("tcp://127.0.0.1:" + std::to_string(free_port()));
    std::vector<unsigned char> buf(128);
    const auto t0 = std::chrono::steady_clock::now();
    const std::string e = error_of([&] { bootstrap_broadcast(r, 1, 2, buf.data(), buf.size(), 0.5); });
    const double took = seconds_since(t0);
    EXPECT_CONTAINS(e, rendezvous_spec(r));
    EXPECT_CONTAINS(e, "rank 1 could not reach rank 0 within 0.5 s");
    EXPECT_CONTAINS(e, "refused");
    EXPECT_TRUE(e.find('\n') == std::string::npos);
    EXPECT_TRUE(took >= 0.35 && took < 2.0);
}

TEST(tcp_rank0_times_out_on_missing_rank) {
    // World of 3 with rank 2 missing: rank 0 gives up naming it; rank 1, connected, sees the connection
    // close.
    const Rendezvous r = parse_rendezvous("tcp://127.0.0.1:" + std::to_string(free_port()));
    const auto t0 = std::chrono::steady_clock::now();
    Outcome out = run_ranks(r, 3, {0, 1}, random_bytes(128), 0, 0.5);
    EXPECT_TRUE(seconds_since(t0) < 2.0);
    EXPECT_CONTAINS(out.error[0], rendezvous_spec(r) + ": rank 0 heard from 1 of 2 other ranks within 0.5 s");
    EXPECT_CONTAINS(out.error[0], "missing: 2");
    EXPECT_CONTAINS(out.error[1], "rank 1 got 0 of 128 bytes from rank 0");
    EXPECT_TRUE(out.data[1] == std::vector<unsigned char>(128, 0));
}

TEST(tcp_rank0_port_taken) {
    // Another process already listens on the port: rank 0 says so at once instead of waiting.
    const int s = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_ANY);
    socklen_t len = sizeof a;
    EXPECT_TRUE(bind(s, (sockaddr*)&a, sizeof a) == 0 && listen(s, 4) == 0 &&
                getsockname(s, (sockaddr*)&a, &len) == 0);
    const Rendezvous r = parse_rendezvous("tcp://127.0.0.1:" + std::to_string(ntohs(a.sin_port)));
    std::vector<unsigned char> buf = random_bytes(128);
    const std::string e = error_of([&] { bootstrap_broadcast(r, 0, 2, buf.data(), buf.size(), 5.0); });
    close(s);
    EXPECT_CONTAINS(e, rendezvous_spec(r) + ": rank 0 could not listen on port");
}

// A client socket connected to itself (what connecting to an ephemeral-range port that nobody listens on yet
// can give; made here on purpose: bound to the port, then connected to it) is recognized, and once closed the
// port is free for rank 0 at once (a plain close leaves it taken: rank 0's listen fails). A connection to a
// listener is not taken for one.
TEST(tcp_self_connection_dropped) {
    const int port = free_port();
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = htons((uint16_t)port);
    const int self = socket(AF_INET, SOCK_STREAM, 0);
    EXPECT_TRUE(bind(self, (sockaddr*)&a, sizeof a) == 0 && connect(self, (sockaddr*)&a, sizeof a) == 0);
    EXPECT_TRUE(drop_self_connection(self));
    close(self);
    const Rendezvous r = parse_rendezvous("tcp://127.0.0.1:" + std::to_string(port));
    const std::vector<unsigned char> id = random_bytes(128);
    const Outcome out = run_ranks(r, 2, {0, 1}, id, 0, 5.0);
    EXPECT_CONTAINS("rank 0 error: '" + out.error[0] + "'", "error: ''");
    EXPECT_TRUE(out.error[1].empty() && out.data[1] == id);

    const int listener = socket(AF_INET, SOCK_STREAM, 0);
    a.sin_port = htons((uint16_t)free_port());
    const int client = socket(AF_INET, SOCK_STREAM, 0);
    EXPECT_TRUE(bind(listener, (sockaddr*)&a, sizeof a) == 0 && listen(listener, 1) == 0 &&
                connect(client, (sockaddr*)&a, sizeof a) == 0);
    EXPECT_TRUE(!drop_self_connection(client));
    close(client);
    close(listener);
}

TEST(file_four_ranks_and_cleanup) {
    TempDir dir("host_launch");
    const Rendezvous r = parse_rendezvous("file:" + dir.file("nccl_id"));
    const std::vector<unsigned char> id = random_bytes(128);
    const auto t0 = std::chrono::steady_clock::now();
    Outcome out = run_ranks(r, 4, {0, 1, 2, 3}, id, 300, 10.0);
    EXPECT_TRUE(seconds_since(t0) < 5.0);
    for (int rank = 0; rank < 4; rank++) {
        EXPECT_CONTAINS("rank " + std::to_string(rank) + " error: '" + out.error[rank] + "'", "error: ''");
        EXPECT_TRUE(out.data[rank] == id);
    }
    struct stat st;
    EXPECT_TRUE(stat(r.path.c_str(), &st) == 0 && st.st_size == 128);
    cleanup_rendezvous(r, 1);  // not rank 0: leaves it
    EXPECT_TRUE(stat(r.path.c_str(), &st) == 0);
    cleanup_rendezvous(r, 0);
    EXPECT_TRUE(stat(r.path.c_str(), &st) != 0);
    cleanup_rendezvous(r, 0);  // already gone: fine
    // No temporary file left behind.
    int entries = 0;
    if (DIR* d = opendir(dir.path.c_str())) {
        while (const dirent* e = readdir(d)) entries += e->d_name[0] != '.';
        closedir(d);
    }
    EXPECT_EQ(entries, 0);
}

TEST(file_timeout_and_wrong_size) {
    TempDir dir("host_launch");
    const Rendezvous r = parse_rendezvous("file:" + dir.file("nccl_id"));
    std::vector<unsigned char> buf(128);
    auto t0 = std::chrono::steady_clock::now();
    std::string e = error_of([&] { bootstrap_broadcast(r, 1, 2, buf.data(), buf.size(), 0.5); });
    double took = seconds_since(t0);
    EXPECT_CONTAINS(e, rendezvous_spec(r) + ": rank 1 did not get the id from rank 0 within 0.5 s");
    EXPECT_CONTAINS(e, "no file");
    EXPECT_TRUE(e.find('\n') == std::string::npos);
    EXPECT_TRUE(took >= 0.35 && took < 2.0);
    // A file of the wrong size is not taken (a truncated or foreign file).
    FILE* f = fopen(r.path.c_str(), "wb");
    fwrite("short", 1, 5, f);
    fclose(f);
    e = error_of([&] { bootstrap_broadcast(r, 1, 2, buf.data(), buf.size(), 0.3); });
    EXPECT_CONTAINS(e, "5 bytes, expected 128");
    // Rank 0 in a missing directory fails at once, naming the file.
    const Rendezvous nowhere = parse_rendezvous("file:" + dir.file("missing/nccl_id"));
    e = error_of([&] { bootstrap_broadcast(nowhere, 0, 2, buf.data(), buf.size(), 5.0); });
    EXPECT_CONTAINS(e, "rank 0 could not create " + dir.file("missing/nccl_id"));
}

TEST(world_of_one_and_none) {
    std::vector<unsigned char> buf = random_bytes(128), before = buf;
    for (const char* spec : {"", "mpi", "tcp://127.0.0.1:1", "file:/nonexistent/dir/id"}) {
        EXPECT_TRUE(error_of([&] {
                        bootstrap_broadcast(parse_rendezvous(spec), 0, 1, buf.data(), 128, 1.0);
                    }).empty());
    }
    EXPECT_TRUE(buf == before);
    const std::string e = error_of([&] { bootstrap_broadcast(Rendezvous{}, 1, 2, buf.data(), 128, 1.0); });
    EXPECT_CONTAINS(e, "--rendezvous");
    EXPECT_CONTAINS(error_of([&] { bootstrap_broadcast(Rendezvous{}, 2, 2, buf.data(), 128, 1.0); }),
                    "rank 2 is outside [0, 2)");
}

TEST(mpi_open_mpi_abi) {
    fake = FakeMpi();
    std::vector<unsigned char> buf(128);
    const std::string e = error_of([&] { mpi_broadcast_with(fake_symbols(true), buf.data(), buf.size()); });
    EXPECT_TRUE(e.empty());
    EXPECT_EQ(fake.init_calls, 1);
    EXPECT_EQ(fake.bcast_calls, 1);
    EXPECT_EQ(fake.finalize_calls, 1);
    EXPECT_EQ(fake.count, 128);
    EXPECT_EQ(fake.root, 0);
    EXPECT_TRUE(fake.data == buf.data());
    EXPECT_TRUE(fake.ompi_comm == &fake_ompi_comm_world && fake.ompi_type == &fake_ompi_byte);
    EXPECT_TRUE(buf == std::vector<unsigned char>(128, 0xab));
}

TEST(mpi_mpich_abi_and_errors) {
    fake = FakeMpi();
    std::vector<unsigned char> buf(128);
    EXPECT_TRUE(error_of([&] { mpi_broadcast_with(fake_symbols(false), buf.data(), buf.size()); }).empty());
    EXPECT_EQ(fake.bcast_calls, 1);
    EXPECT_EQ(fake.mpich_comm, 0x44000000);
    EXPECT_EQ(fake.mpich_type, 0x4c00010d);
    EXPECT_EQ(fake.count, 128);
    EXPECT_EQ(fake.finalize_calls, 1);
    EXPECT_TRUE(buf == std::vector<unsigned char>(128, 0xcd));

    fake = FakeMpi();
    fake.rc = 13;
    std::string e = error_of([&] { mpi_broadcast_with(fake_symbols(false), buf.data(), buf.size()); });
    EXPECT_CONTAINS(e, "rendezvous mpi: MPI_Bcast failed (MPI error 13)");
    e = error_of([&] { mpi_broadcast_with(fake_symbols(true, false), buf.data(), buf.size()); });
    EXPECT_CONTAINS(e, "no MPI_Init");
}

TEST(mpi_without_library) {
    for (const char* lib : {"libmpi.so.40", "libmpi.so", "libmpi.so.12"}) {
        if (void* h = dlopen(lib, RTLD_LAZY | RTLD_LOCAL)) {
            dlclose(h);
            SKIP(std::string(lib) + " is installed: the missing-library error cannot be shown here");
        }
    }
    std::vector<unsigned char> buf(128);
    const std::string e =
        error_of([&] { bootstrap_broadcast(parse_rendezvous("mpi"), 1, 2, buf.data(), 128, 1.0); });
    EXPECT_CONTAINS(e, "rendezvous mpi: could not load an MPI library");
    EXPECT_CONTAINS(e, "libmpi.so.12");
    EXPECT_TRUE(e.find('\n') == std::string::npos);
}

TEST_MAIN()
