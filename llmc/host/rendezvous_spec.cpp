#include "llmc/host/rendezvous_spec.h"

#include <cctype>
#include <stdexcept>

namespace {

[[noreturn]] void fail(const std::string& msg) { throw std::runtime_error(msg); }

}  // namespace

Rendezvous parse_rendezvous(const std::string& spec) {
    Rendezvous r;
    const auto bad = [&](const std::string& why) -> Rendezvous {
        fail("--rendezvous '" + spec + "': " + why + " (expected tcp://HOST:PORT, file:PATH or mpi)");
    };
    if (spec.empty()) return r;
    if (spec == "mpi") {
        r.kind = Rendezvous::Kind::Mpi;
        return r;
    }
    if (spec.rfind("file:", 0) == 0) {
        r.kind = Rendezvous::Kind::File;
        r.path = spec.substr(5);
        if (r.path.empty()) return bad("no path");
        return r;
    }
    if (spec.rfind("tcp://", 0) == 0) {
        const std::string rest = spec.substr(6);
        const size_t colon = rest.rfind(':');
        if (colon == std::string::npos) return bad("no port");
        const std::string host = rest.substr(0, colon), port = rest.substr(colon + 1);
        if (host.empty()) return bad("no host");
        for (char c : host)
            if (!isalnum((unsigned char)c) && c != '.' && c != '-' && c != '_')
                return bad("host must be a name or an IPv4 address");
        if (port.empty() || port.size() > 5 || port.find_first_not_of("0123456789") != std::string::npos)
            return bad("port must be a number in 1..65535");
        const int p = std::stoi(port);
        if (p < 1 || p > 65535) return bad("port must be a number in 1..65535");
        r.kind = Rendezvous::Kind::Tcp;
        r.host = host;
        r.port = p;
        return r;
    }
    return bad("unknown kind");
}

std::string rendezvous_spec(const Rendezvous& r) {
    switch (r.kind) {
        case Rendezvous::Kind::Tcp:
            return "tcp://" + r.host + ":" + std::to_string(r.port);
        case Rendezvous::Kind::File:
            return "file:" + r.path;
        case Rendezvous::Kind::Mpi:
            return "mpi";
        case Rendezvous::Kind::None:
            break;
    }
    return "none";
}
