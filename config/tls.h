// TLS for the node's listeners (HTTP and line-protocol TCP): the server context built from
// TlsOptions, and the handshake-failure accounting both listeners share.
//
// The context is made once at start-up; a certificate, key or version problem is a Status naming
// the setting and the file, with OpenSSL's reason, so that a misconfigured node never starts
// serving plaintext or half-configured TLS.
//
// Thread safety: a context is read-only once made and may serve handshakes on any thread.
// HandshakeFailed is thread-safe.
#pragma once

#include <memory>
#include <string_view>

#include "config/asio.h"
#include "config/options.h"
#include "config/status.h"

#include <boost/asio/ssl.hpp>

namespace ingot {

// A server context for `tls` (REQUIRES: tls.enabled()): the certificate chain and the private key
// from PEM files (checked to belong together), TLS `tls.min_version` or newer, no compression or
// renegotiation. `setting` is the key prefix for messages ("query.tls").
Status MakeServerTlsContext(const TlsOptions& tls, std::string_view setting,
                            std::unique_ptr<asio::ssl::context>* context);

// Counts a failed handshake on `listener` ("http" or "tcp") in
// ingot_tls_handshake_failures_total and logs it, at most once a second per listener with the
// number left out. A client speaking plaintext to a TLS port lands here.
void HandshakeFailed(std::string_view listener, std::string_view peer,
                     const boost::system::error_code& ec);

}  // namespace ingot
