// Broken: never stores, so out keeps the verifier's poison (expect unwritten_output).
extern "C" __global__ void writes_nothing(const float* x, const float* y, float* out, int n) {}
