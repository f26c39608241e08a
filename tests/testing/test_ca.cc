#include "testing/test_ca.h"

#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include <cstdlib>
#include <iostream>

namespace relay::testing {

namespace {

// A test cannot go on without its certificates.
void Check(bool ok, const char* what) {
  if (!ok) {
    std::cerr << "TestCa: " << what << " failed\n";
    std::abort();
  }
}

std::string ToPem(X509* cert) {
  BIO* bio = BIO_new(BIO_s_mem());
  Check(PEM_write_bio_X509(bio, cert) == 1, "writing a certificate");
  char* data = nullptr;
  long length = BIO_get_mem_data(bio, &data);
  std::string pem(data, static_cast<size_t>(length));
  BIO_free(bio);
  return pem;
}

std::string ToPem(EVP_PKEY* key) {
  BIO* bio = BIO_new(BIO_s_mem());
  Check(PEM_write_bio_PrivateKey(bio, key, nullptr, nullptr, 0, nullptr, nullptr) == 1,
        "writing a key");
  char* data = nullptr;
  long length = BIO_get_mem_data(bio, &data);
  std::string pem(data, static_cast<size_t>(length));
  BIO_free(bio);
  return pem;
}

void AddExtension(X509* cert, X509* issuer, int nid, const char* value) {
  X509V3_CTX ctx;
  X509V3_set_ctx_nodb(&ctx);
  X509V3_set_ctx(&ctx, issuer, cert, nullptr, nullptr, 0);
  X509_EXTENSION* extension = X509V3_EXT_conf_nid(nullptr, &ctx, nid, value);
  Check(extension != nullptr && X509_add_ext(cert, extension, -1) == 1, "an extension");
  X509_EXTENSION_free(extension);
}

// A certificate for key, named name, signed by signer (itself when null).
X509* MakeCert(EVP_PKEY* key, const std::string& name, X509* issuer, EVP_PKEY* signer, long serial) {
  X509* cert = X509_new();
  Check(cert != nullptr, "X509_new");
  X509_set_version(cert, 2);
  ASN1_INTEGER_set(X509_get_serialNumber(cert), serial);
  X509_gmtime_adj(X509_getm_notBefore(cert), -3600);
  X509_gmtime_adj(X509_getm_notAfter(cert), 24 * 3600);
  X509_set_pubkey(cert, key);
  X509_NAME* subject = X509_get_subject_name(cert);
  X509_NAME_add_entry_by_txt(subject, "CN", MBSTRING_UTF8,
                             reinterpret_cast<const unsigned char*>(name.c_str()), -1, -1, 0);
  X509_set_issuer_name(cert, issuer != nullptr ? X509_get_subject_name(issuer) : subject);
  return cert;
}

}  // namespace

struct TestCa::Keys {
  EVP_PKEY* key = nullptr;
  X509* cert = nullptr;
};

TestCa::TestCa(const std::string& ca_name) : keys_(new Keys) {
  keys_->key = EVP_EC_gen("P-256");
  Check(keys_->key != nullptr, "a CA key");
  keys_->cert = MakeCert(keys_->key, ca_name, nullptr, keys_->key, 1);
  AddExtension(keys_->cert, keys_->cert, NID_basic_constraints, "critical,CA:TRUE");
  AddExtension(keys_->cert, keys_->cert, NID_key_usage, "critical,keyCertSign,cRLSign");
  AddExtension(keys_->cert, keys_->cert, NID_subject_key_identifier, "hash");
  Check(X509_sign(keys_->cert, keys_->key, EVP_sha256()) > 0, "signing the CA");
  ca_pem_ = ToPem(keys_->cert);
}

TestCa::~TestCa() {
  X509_free(keys_->cert);
  EVP_PKEY_free(keys_->key);
  delete keys_;
}

common::ServiceTls TestCa::Issue(const std::string& role, Use use, const std::string& san) const {
  static long serial = 100;
  EVP_PKEY* key = EVP_EC_gen("P-256");
  Check(key != nullptr, "a key");
  X509* cert = MakeCert(key, role, keys_->cert, keys_->key, ++serial);
  AddExtension(cert, keys_->cert, NID_basic_constraints, "critical,CA:FALSE");
  AddExtension(cert, keys_->cert, NID_authority_key_identifier, "keyid");
  if (use == Use::kServer) {
    AddExtension(cert, keys_->cert, NID_subject_alt_name, san.c_str());
    AddExtension(cert, keys_->cert, NID_ext_key_usage, "serverAuth");
  } else {
    AddExtension(cert, keys_->cert, NID_ext_key_usage, "clientAuth");
  }
  Check(X509_sign(cert, keys_->key, EVP_sha256()) > 0, "signing a certificate");
  common::ServiceTls tls{ca_pem_, ToPem(cert), ToPem(key)};
  X509_free(cert);
  EVP_PKEY_free(key);
  return tls;
}

}  // namespace relay::testing
