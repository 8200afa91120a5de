#include "support/test_support.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <stdexcept>

namespace hazefree::test {

std::string sample_path(const std::string& name) {
  return std::string(HAZEFREE_SAMPLES_DIR) + "/" + name;
}

std::string temp_dir(const std::string& name) {
  const std::filesystem::path dir = std::filesystem::path(HAZEFREE_TEST_TMP) / name;
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir.string();
}

int bound_loopback_socket(int type, int* port) {
  const int fd = socket(AF_INET, type | SOCK_CLOEXEC, 0);
  if (fd < 0) throw std::runtime_error(std::string("socket: ") + std::strerror(errno));
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t size = sizeof address;
  if (bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0 ||
      getsockname(fd, reinterpret_cast<sockaddr*>(&address), &size) != 0) {
    const int error = errno;
    close(fd);
    throw std::runtime_error(std::string("a loopback port: ") + std::strerror(error));
  }
  *port = ntohs(address.sin_port);
  return fd;
}

int free_loopback_port(int type) {
  int port = 0;
  close(bound_loopback_socket(type, &port));
  return port;
}

}  // namespace hazefree::test
