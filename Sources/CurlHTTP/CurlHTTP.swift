// Module CurlHTTP.
