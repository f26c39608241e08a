#include "common/link/link_socket.h"

#include <sys/socket.h>
#include <csignal>
#include <unistd.h>

#include <memory>
#include <string>

#include "common/link/link_tls.h"
#include "gtest/gtest.h"
#include "testing/test_ca.h"

namespace relay::common {
namespace {

using testing::TestCa;

// Two connected non-blocking sockets, closed at the end of the test.
struct SocketPair {
  SocketPair() {
    int fds[2];
    EXPECT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, fds), 0);
    a = fds[0];
    b = fds[1];
  }
  ~SocketPair() {
    if (a >= 0) ::close(a);
    if (b >= 0) ::close(b);
  }
  int a = -1;
  int b = -1;
};

std::string Pattern(size_t size) {
  std::string data(size, '\0');
  for (size_t i = 0; i < size; ++i) {
    data[i] = static_cast<char>('a' + (i * 7 + i / 4096) % 26);
  }
  return data;
}

// Writes all of data from `from` while `to` reads, in the steps the sockets
// allow; what `to` read. *partial counts the writes that took less than was
// left, or nothing.
std::string Carry(LinkSocket& from, LinkSocket& to, const std::string& data, int* partial) {
  std::string got;
  std::string room(64 << 10, '\0');
  size_t written = 0;
  for (int turn = 0; turn < 100000 && got.size() < data.size(); ++turn) {
    if (written < data.size()) {
      LinkStep step = from.Write(absl::string_view(data).substr(written));
      if (step.io == LinkIo::kDone) {
        *partial += step.bytes < data.size() - written ? 1 : 0;
        written += step.bytes;
      } else {
        EXPECT_TRUE(step.io == LinkIo::kWantWrite || step.io == LinkIo::kWantRead) << step.error;
        ++*partial;
      }
    }
    LinkStep read = to.Read(absl::MakeSpan(room));
    if (read.io == LinkIo::kDone) {
      got.append(room.data(), read.bytes);
    } else {
      EXPECT_EQ(read.io, LinkIo::kWantRead) << read.error;
    }
  }
  return got;
}

TEST(LinkSocketTest, PlainWriteTakesWhatTheSocketHasRoomForThenWaits) {
  SocketPair pair;
  int small = 16 << 10;
  ASSERT_EQ(::setsockopt(pair.a, SOL_SOCKET, SO_SNDBUF, &small, sizeof(small)), 0);
  LinkSocket a, b;
  a.Attach(pair.a);
  b.Attach(pair.b);
  ASSERT_EQ(a.Handshake().io, LinkIo::kDone);  // nothing to do over plaintext
  EXPECT_FALSE(a.tls());
  EXPECT_EQ(a.peer_role(), "");

  const std::string data = Pattern(4 << 20);
  LinkStep first = a.Write(data);
  ASSERT_EQ(first.io, LinkIo::kDone);
  EXPECT_LT(first.bytes, data.size());  // a partial write
  EXPECT_EQ(a.Write(absl::string_view(data).substr(first.bytes)).io, LinkIo::kWantWrite);

  std::string room(1 << 20, '\0');
  LinkStep read = b.Read(absl::MakeSpan(room));
  ASSERT_EQ(read.io, LinkIo::kDone);
  EXPECT_EQ(std::string(room.data(), read.bytes), data.substr(0, read.bytes));

  int partial = 0;
  std::string rest = Carry(a, b, data.substr(first.bytes), &partial);
  EXPECT_EQ(data.substr(0, read.bytes) + rest, data);
}

TEST(LinkSocketTest, PlainReadWithNothingThereWaitsAndAClosedPeerIsClosed) {
  SocketPair pair;
  LinkSocket a, b;
  a.Attach(pair.a);
  b.Attach(pair.b);
  std::string room(1024, '\0');
  EXPECT_EQ(b.Read(absl::MakeSpan(room)).io, LinkIo::kWantRead);
  ::close(pair.a);
  pair.a = -1;
  EXPECT_EQ(b.Read(absl::MakeSpan(room)).io, LinkIo::kClosed);
  EXPECT_EQ(b.Write("after the close").io, LinkIo::kClosed);  // EPIPE, no SIGPIPE
}

// drained() lets the link wait without the read that would find nothing:
// true only when a read took less than it had room for.
TEST(LinkSocketTest, PlainReadSaysWhenItDrainedTheSocket) {
  SocketPair pair;
  LinkSocket a, b;
  a.Attach(pair.a);
  b.Attach(pair.b);
  ASSERT_EQ(a.Write(Pattern(100)).io, LinkIo::kDone);
  std::string room(1024, '\0');
  LinkStep read = b.Read(absl::MakeSpan(room));
  ASSERT_EQ(read.io, LinkIo::kDone);
  EXPECT_EQ(read.bytes, 100u);
  EXPECT_TRUE(b.drained());

  ASSERT_EQ(a.Write(Pattern(1500)).io, LinkIo::kDone);
  read = b.Read(absl::MakeSpan(room));
  ASSERT_EQ(read.io, LinkIo::kDone);
  EXPECT_EQ(read.bytes, 1024u);
  EXPECT_FALSE(b.drained());  // a full read cannot tell: read on
  read = b.Read(absl::MakeSpan(room));
  EXPECT_EQ(read.bytes, 1500u - 1024u);
  EXPECT_TRUE(b.drained());
}

TEST(LinkSocketTest, ReleasedSocketStepsAreClosed) {
  SocketPair pair;
  LinkSocket a;
  a.Attach(pair.a);
  a.Release();
  std::string room(16, '\0');
  EXPECT_EQ(a.Read(absl::MakeSpan(room)).io, LinkIo::kClosed);
  EXPECT_EQ(a.Write("x").io, LinkIo::kClosed);
  EXPECT_EQ(a.Handshake().io, LinkIo::kClosed);
}

// A server and a client socket under TLS over a socket pair.
class LinkSocketTlsTest : public ::testing::Test {
 protected:
  // As in the services (common/signals.cc): OpenSSL writes to the descriptor
  // without MSG_NOSIGNAL, so a peer gone is EPIPE, not a signal.
  LinkSocketTlsTest() { std::signal(SIGPIPE, SIG_IGN); }

  // Steps both handshakes until both are done or one fails; the failing
  // step's outcome, or kDone.
  LinkStep Handshake(LinkSocket& server, LinkSocket& client) {
    bool server_done = false, client_done = false;
    for (int turn = 0; turn < 100 && !(server_done && client_done); ++turn) {
      if (!client_done) {
        LinkStep step = client.Handshake();
        if (step.io == LinkIo::kDone) {
          client_done = true;
        } else if (step.io != LinkIo::kWantRead && step.io != LinkIo::kWantWrite) {
          return step;
        }
      }
      if (!server_done) {
        LinkStep step = server.Handshake();
        if (step.io == LinkIo::kDone) {
          server_done = true;
        } else if (step.io != LinkIo::kWantRead && step.io != LinkIo::kWantWrite) {
          return step;
        }
      }
    }
    return {server_done && client_done ? LinkIo::kDone : LinkIo::kError, 0, "no end"};
  }

  std::shared_ptr<LinkTls> Tls(const ServiceTls& tls, LinkTls::Side side) {
    auto made = LinkTls::Make(tls, side);
    EXPECT_TRUE(made.ok()) << made.status();
    return made.ok() ? *made : nullptr;
  }

  // server_ on the pair's first socket with server_cert, client_ on the
  // second with client_cert, dialling host; the handshake not begun.
  void Begin(const ServiceTls& server_cert, const ServiceTls& client_cert, const std::string& host) {
    server_tls_ = Tls(server_cert, LinkTls::Side::kServer);
    client_tls_ = Tls(client_cert, LinkTls::Side::kClient);
    server_.Attach(pair_.a);
    client_.Attach(pair_.b);
    ASSERT_TRUE(server_.StartTls(server_tls_->context(), /*server=*/true, "").ok());
    ASSERT_TRUE(client_.StartTls(client_tls_->context(), /*server=*/false, host).ok());
  }
  ServiceTls Router() { return ca_.Issue("router", TestCa::Use::kServer); }
  ServiceTls Gateway() { return ca_.Issue("gateway", TestCa::Use::kClient); }

  TestCa ca_;
  SocketPair pair_;
  std::shared_ptr<LinkTls> server_tls_, client_tls_;
  LinkSocket server_, client_;
};

TEST_F(LinkSocketTlsTest, HandshakeNamesEachPeersRole) {
  Begin(Router(), Gateway(), "127.0.0.1");
  LinkStep done = Handshake(server_, client_);
  ASSERT_EQ(done.io, LinkIo::kDone) << done.error;
  EXPECT_EQ(server_.peer_role(), "gateway");
  EXPECT_EQ(client_.peer_role(), "router");
}

TEST_F(LinkSocketTlsTest, PartialWritesArriveWholeAndInOrder) {
  int small = 16 << 10;
  ASSERT_EQ(::setsockopt(pair_.a, SOL_SOCKET, SO_SNDBUF, &small, sizeof(small)), 0);
  Begin(Router(), Gateway(), "localhost");
  ASSERT_EQ(Handshake(server_, client_).io, LinkIo::kDone);
  const std::string data = Pattern(3 << 20);
  int partial = 0;
  EXPECT_EQ(Carry(server_, client_, data, &partial), data);
  EXPECT_GT(partial, 0);  // the socket was full at times: the writes were partial
  EXPECT_EQ(Carry(client_, server_, "and back", &partial), "and back");
}

// Records OpenSSL read ahead in one recv are not drained until the last is
// handed out: a wait begun before that would never end.
TEST_F(LinkSocketTlsTest, ReadIsDrainedOnlyOnceTheRecordsReadAheadAreOut) {
  Begin(Router(), Gateway(), "localhost");
  ASSERT_EQ(Handshake(server_, client_).io, LinkIo::kDone);
  // Whatever the handshake left (a TLS 1.3 session ticket) taken first.
  std::string room(64 << 10, '\0');
  ASSERT_EQ(server_.Write("first").io, LinkIo::kDone);
  std::string got;
  while (got.size() < 5) {
    LinkStep read = client_.Read(absl::MakeSpan(room));
    ASSERT_EQ(read.io, LinkIo::kDone) << read.error;
    got.append(room.data(), read.bytes);
  }
  EXPECT_EQ(got, "first");
  EXPECT_TRUE(client_.drained());

  // Three records, in the socket before the client reads any.
  ASSERT_EQ(server_.Write("one").io, LinkIo::kDone);
  ASSERT_EQ(server_.Write("two").io, LinkIo::kDone);
  ASSERT_EQ(server_.Write("three").io, LinkIo::kDone);
  got.clear();
  while (got.size() < 11) {
    LinkStep read = client_.Read(absl::MakeSpan(room));
    ASSERT_EQ(read.io, LinkIo::kDone) << read.error;
    got.append(room.data(), read.bytes);
    EXPECT_EQ(client_.drained(), got.size() == 11) << "after " << got;
  }
  EXPECT_EQ(got, "onetwothree");
  EXPECT_EQ(client_.Read(absl::MakeSpan(room)).io, LinkIo::kWantRead);
}

TEST_F(LinkSocketTlsTest, ClientRefusesAServerCertificateForAnotherHost) {
  Begin(Router(), Gateway(), "10.9.8.7");
  LinkStep failed = Handshake(server_, client_);
  EXPECT_EQ(failed.io, LinkIo::kError);
  EXPECT_NE(failed.error.find("certificate"), std::string::npos) << failed.error;
}

TEST_F(LinkSocketTlsTest, ServerRefusesAClientOfAnotherCa) {
  TestCa other("another CA");
  ServiceTls stranger = other.Issue("gateway", TestCa::Use::kClient);
  stranger.ca_pem = ca_.ca_pem();  // it trusts the server; the server does not trust it
  Begin(Router(), stranger, "127.0.0.1");
  EXPECT_NE(Handshake(server_, client_).io, LinkIo::kDone);
  EXPECT_EQ(server_.peer_role(), "");
}

TEST_F(LinkSocketTlsTest, ServerRefusesAServerCertificateAsAClient) {
  // A router's certificate (serverAuth) presented by a client: the purpose
  // check refuses it, so a stolen router key cannot dial in as a gateway.
  Begin(Router(), Router(), "127.0.0.1");
  EXPECT_NE(Handshake(server_, client_).io, LinkIo::kDone);
}

TEST_F(LinkSocketTlsTest, PlaintextBytesToATlsServerAreAnError) {
  auto server_tls = Tls(ca_.Issue("router", TestCa::Use::kServer), LinkTls::Side::kServer);
  LinkSocket server;
  server.Attach(pair_.a);
  ASSERT_TRUE(server.StartTls(server_tls->context(), true, "").ok());
  const std::string junk = "GET / HTTP/1.1\r\nHost: x\r\n\r\n";
  ASSERT_EQ(::send(pair_.b, junk.data(), junk.size(), 0), static_cast<ssize_t>(junk.size()));
  LinkStep step = server.Handshake();
  EXPECT_EQ(step.io, LinkIo::kError);
  EXPECT_FALSE(step.error.empty());
}

}  // namespace
}  // namespace relay::common
