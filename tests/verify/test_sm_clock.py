"""The SM clock a verified row records (verify.device.driver.sm_clock_mhz): read through
cuda.bindings.nvml, else pynvml when installed, else the driver's maximum clock, and always
saying which (``SmClock.source``, with ``reason`` for the maximum), so a maximum clock is
never mistaken for a measured one. Runs without a GPU: the NVML readers are stand-ins
where a test needs one to answer."""
from __future__ import annotations

import json
import multiprocessing
import pickle
import sys
import types

import pytest

from verify.device.driver import DeviceInfo, SmClock, sm_clock_mhz

BUS_ID = "0000:FF:1F.0"  # no GPU sits there: a real NVML cannot find it


def info() -> DeviceInfo:
    return DeviceInfo(ordinal=0, name="stand-in", cc=(9, 0), sm_count=132, l2_bytes=50 << 20,
                      max_clock_mhz=1980, pci_bus_id=BUS_ID, driver_version="13.0", device_count=1)


class FakeNvml(types.ModuleType):
    """cuda.bindings.nvml's calls the clock uses; knows one bus id, counts init/shutdown."""

    class ClockType:
        CLOCK_SM = 1

    def __init__(self, clocks=None, fail=None):
        super().__init__("cuda.bindings.nvml")
        self.clocks, self.fail, self.open = clocks or {}, fail, 0

    def init_v2(self):
        if self.fail:
            raise self.fail
        self.open += 1

    def shutdown(self):
        self.open -= 1

    def device_get_handle_by_pci_bus_id_v2(self, bus_id):
        assert isinstance(bus_id, str)
        if bus_id not in self.clocks:
            raise RuntimeError(f"NotFoundError: {bus_id}")
        return bus_id

    def device_get_clock_info(self, handle, clock_type):
        assert clock_type == self.ClockType.CLOCK_SM
        return self.clocks[handle]


class FakePynvml(types.ModuleType):
    """pynvml's calls; like older nvidia-ml-py, it takes the bus id as bytes only."""
    NVML_CLOCK_SM = 1

    def __init__(self, clocks):
        super().__init__("pynvml")
        self.clocks, self.open = clocks, 0

    def nvmlInit(self):
        self.open += 1

    def nvmlShutdown(self):
        self.open -= 1

    def nvmlDeviceGetHandleByPciBusId(self, bus_id):
        if not isinstance(bus_id, bytes) or bus_id.decode() not in self.clocks:
            raise RuntimeError("NVML_ERROR_NOT_FOUND")
        return bus_id.decode()

    def nvmlDeviceGetClockInfo(self, handle, clock_type):
        assert clock_type == self.NVML_CLOCK_SM
        return self.clocks[handle]


def test_no_device_is_zero_and_says_so():
    clock = sm_clock_mhz(None)
    assert clock == 0 and clock.source == "none" and "no device" in clock.reason


def test_without_any_nvml_reader_the_maximum_clock_is_marked_as_such(monkeypatch):
    monkeypatch.setitem(sys.modules, "cuda.bindings.nvml", None)  # None in sys.modules: ImportError
    monkeypatch.setitem(sys.modules, "pynvml", None)
    clock = sm_clock_mhz(info())
    assert clock == 1980 and clock.source == "max_clock"
    assert clock.reason.startswith("the driver's maximum SM clock, not the current one")
    assert "cuda.bindings.nvml not importable" in clock.reason and "pynvml not importable" in clock.reason


def test_on_this_machine_the_clock_names_its_source():
    """Whatever NVML this machine has (none without a driver), the stand-in bus id is not a
    GPU's: the maximum clock comes back, marked, with cuda.bindings.nvml's own failure."""
    clock = sm_clock_mhz(info())
    assert clock == 1980 and clock.source == "max_clock"
    assert "cuda.bindings.nvml" in clock.reason


def test_cuda_bindings_nvml_reads_the_current_clock_by_bus_id(monkeypatch):
    nvml = FakeNvml({BUS_ID: 1410})
    monkeypatch.setitem(sys.modules, "cuda.bindings.nvml", nvml)
    monkeypatch.setitem(sys.modules, "pynvml", FakePynvml({BUS_ID: 999}))
    clock = sm_clock_mhz(info())
    assert clock == 1410 and clock.source == "nvml" and clock.reason == ""
    assert nvml.open == 0  # shut down again


def test_a_gpu_nvml_cannot_find_is_never_read_by_index(monkeypatch):
    """NVML knows another GPU only: its clock must not pass for this one's."""
    monkeypatch.setitem(sys.modules, "cuda.bindings.nvml", FakeNvml({"0000:01:00.0": 1200}))
    monkeypatch.setitem(sys.modules, "pynvml", None)
    clock = sm_clock_mhz(info())
    assert clock == 1980 and clock.source == "max_clock" and BUS_ID in clock.reason


def test_pynvml_is_the_fallback_when_cuda_bindings_nvml_fails(monkeypatch):
    monkeypatch.setitem(sys.modules, "cuda.bindings.nvml", FakeNvml(fail=RuntimeError("libnvidia-ml.so.1 not found")))
    pynvml = FakePynvml({BUS_ID: 1755})
    monkeypatch.setitem(sys.modules, "pynvml", pynvml)
    clock = sm_clock_mhz(info())
    assert clock == 1755 and clock.source == "pynvml" and pynvml.open == 0


def test_the_clock_stays_an_int_and_keeps_its_source_through_the_workers_pipe():
    clock = SmClock(1980, "max_clock", "cuda.bindings.nvml: no library")
    assert json.dumps({"sm_clock_mhz": clock}) == '{"sm_clock_mhz": 1980}'
    assert int(clock) == 1980 and type(int(clock)) is int
    again = pickle.loads(pickle.dumps(clock))
    assert (again, again.source, again.reason) == (1980, "max_clock", "cuda.bindings.nvml: no library")
    receive, send = multiprocessing.Pipe(duplex=False)
    send.send({"type": "hello", "sm_clock_mhz": clock})
    hello = receive.recv()
    assert hello["sm_clock_mhz"].source == "max_clock"
