// Tests for CurlHTTP.
