#pragma once

// LinkChannel's I/O state, shared by link_channel.cc and link_listener.cc only
// (the listener accepts into the channel's socket). Not for other includes:
// it brings Asio in.

#include <chrono>
#include <string>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>

#include "common/link/link_channel.h"
#include "common/link/link_frame.h"
#include "common/link/link_socket.h"

namespace relay::common {

struct LinkChannel::Io {
  explicit Io(boost::asio::io_context& io) : io(io), socket(io), timer(io), beat(io), resolver(io) {}
  boost::asio::io_context& io;
  boost::asio::ip::tcp::socket socket;
  LinkSocket stream;                 // socket's bytes, under TLS or not
  boost::asio::steady_timer timer;   // the open deadline
  boost::asio::steady_timer beat;    // liveness: a ping, and a look at the peer, every kPingEvery
  boost::asio::ip::tcp::resolver resolver;
  LinkFrameReader reader;
  std::string host;          // client side: what the server's certificate must name
  std::string out;           // what is being written
  size_t written = 0;        // of out
  bool write_waiting = false;  // for the socket to take more
  // Liveness (kPingEvery, kSilence): when the peer last sent us bytes, and
  // when our writes last made headway.
  std::chrono::steady_clock::time_point heard;
  std::chrono::steady_clock::time_point wrote;
  bool ping_due = false;
  bool pong_due = false;
  bool read_parked = false;  // reading paused (ReadPaused) until ResumeReading
  int unacknowledged = -1;   // SIOCOUTQ at the last beat while a write waited
};

}  // namespace relay::common
