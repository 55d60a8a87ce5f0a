"""The device layer: the CUDA driver (``driver``), outputs read back on the device (``device_outputs``), holding and
flushing the GPU (``hold``, ``l2flush``, ``residency``), the SM clock (``kernel_clock``) and the pool that assembles PTX
ahead of the GPU (``assembly_pool``)."""
