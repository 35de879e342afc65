//! [`SimHost`]: the simulated NIC and everything around it in one cycle loop, behind the
//! driver's traits.

use crate::axil::AxilMaster;
use crate::dma::{DmaConfig, DmaService};
use crate::error::HostError;
use crate::irq::Irq;
use crate::memory::{HostMemory, MemoryConfig};
use nicgen_driver::hw::{DmaError, DmaMemory, DmaRegion, Interrupts, RegisterSpace};
use nicgen_tb::stream::Agent;
use nicgen_tb::Sim;
use std::any::Any;
use std::marker::PhantomData;

/// The knobs of a [`SimHost`].
#[derive(Clone, Debug, PartialEq)]
pub struct HostConfig {
    /// The DMA service's knobs (seed, latency, reordering, bandwidth, stalls).
    pub dma: DmaConfig,
    /// The host's DMA address space.
    pub memory: MemoryConfig,
    /// The NIC's clock, MHz: converts the driver's nanoseconds to cycles and back.
    pub clock_mhz: f64,
    /// Cycles a BAR transaction may take before it fails.
    pub axil_budget: u64,
    /// Cycles that [`Interrupts::relax`] lets pass.
    pub relax_cycles: u64,
}

impl Default for HostConfig {
    /// [`DmaConfig::default`], 256 MiB of memory at 4 GiB, 250 MHz, 10 000-cycle BAR budget,
    /// 8 cycles per `relax`.
    fn default() -> Self {
        HostConfig {
            dma: DmaConfig::default(),
            memory: MemoryConfig::default(),
            clock_mhz: 250.0,
            axil_budget: 10_000,
            relax_cycles: 8,
        }
    }
}

impl HostConfig {
    /// The defaults with every random choice drawn from `seed`.
    pub fn from_seed(seed: u64) -> HostConfig {
        HostConfig {
            dma: DmaConfig {
                seed,
                ..DmaConfig::default()
            },
            ..HostConfig::default()
        }
    }
}

/// An agent the host steps in its cycle loop (blanket-implemented for every `Send` agent).
trait HostAgent: Agent + Send {
    fn as_any(&self) -> &dyn Any;
    fn as_any_mut(&mut self) -> &mut dyn Any;
}

impl<T: Agent + Send + 'static> HostAgent for T {
    fn as_any(&self) -> &dyn Any {
        self
    }
    fn as_any_mut(&mut self) -> &mut dyn Any {
        self
    }
}

/// Names an agent added with [`SimHost::add_agent`], typed so that it can be looked at again.
#[derive(Debug)]
pub struct AgentId<T> {
    index: usize,
    _agent: PhantomData<fn() -> T>,
}

impl<T> Clone for AgentId<T> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<T> Copy for AgentId<T> {}

/// The simulated host machine around a Verilator-simulated NIC.
///
/// Owns the [`Sim`], the [`HostMemory`], the [`DmaService`], the [`Irq`] latch, the BAR
/// [`AxilMaster`] and any extra [`Agent`]s (stream drivers and sinks on the NIC's MAC side,
/// monitors); [`cycle`](Self::cycle) steps them all once. It implements the driver's traits:
/// [`RegisterSpace`] through the BAR master (each access takes simulated cycles),
/// [`DmaMemory`] through the host memory, and [`Interrupts`] through the latch, with time
/// counted in cycles of `clock_mhz`.
///
/// The driver's traits cannot return errors, so when one of their calls meets a failure (a
/// DMA rule broken by the NIC, a BAR transaction that never completes, a driver access to
/// memory it never allocated, a double free) it panics with the error: the simulation cannot
/// go on meaningfully, and in a test that is the loud failure wanted. The `try_*` methods
/// return the same errors as values.
pub struct SimHost {
    sim: Sim,
    memory: HostMemory,
    dma: DmaService,
    irq: Irq,
    axil: AxilMaster,
    agents: Vec<Box<dyn HostAgent>>,
    config: HostConfig,
}

impl std::fmt::Debug for SimHost {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SimHost")
            .field("top", &self.sim.top())
            .field("cycles", &self.sim.cycles())
            .field("agents", &self.agents.len())
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

impl SimHost {
    /// Wraps `sim`, whose top must have the host contract's ports (`hdl/src/host/mod.rs`).
    pub fn new(sim: Sim, config: HostConfig) -> Result<SimHost, HostError> {
        if !(config.clock_mhz > 0.0 && config.clock_mhz.is_finite()) {
            return Err(HostError::Config {
                field: "clock_mhz",
                message: format!("is {}, must be a positive frequency", config.clock_mhz),
            });
        }
        let memory = HostMemory::new(config.memory)?;
        let dma = DmaService::new(&sim, config.dma.clone())?;
        let irq = Irq::new(&sim)?;
        let axil = AxilMaster::new(&sim, config.axil_budget)?;
        Ok(SimHost {
            sim,
            memory,
            dma,
            irq,
            axil,
            agents: Vec::new(),
            config,
        })
    }

    /// The knobs.
    pub fn config(&self) -> &HostConfig {
        &self.config
    }

    /// Holds `rst` (if the top has one) high for `cycles` cycles of the whole loop.
    pub fn reset(&mut self, cycles: u64) -> Result<(), HostError> {
        let Some(rst) = self.sim.try_port("rst") else {
            return Ok(());
        };
        self.sim.set(rst, 1);
        let run = self.run(cycles);
        self.sim.set(rst, 0);
        run
    }

    /// One clock cycle of everything: the DMA service, the BAR master and the agents drive
    /// their inputs, the NIC is clocked, then all of them observe the sampled values. Returns
    /// whether anything was transferred or latched. After an error the host's state is that of
    /// a broken link: report the error, do not go on simulating.
    pub fn cycle(&mut self) -> Result<bool, HostError> {
        self.dma.drive(&mut self.sim, &self.memory);
        self.axil.drive(&mut self.sim);
        for a in &mut self.agents {
            a.drive(&mut self.sim);
        }
        self.sim.cycle();
        let mut progress = self.dma.observe(&self.sim, &mut self.memory)?;
        progress |= self.irq.observe(&self.sim);
        progress |= self.axil.observe(&self.sim);
        for a in &mut self.agents {
            progress |= a.observe(&self.sim)?;
        }
        Ok(progress)
    }

    /// `n` cycles.
    pub fn run(&mut self, n: u64) -> Result<(), HostError> {
        for _ in 0..n {
            self.cycle()?;
        }
        Ok(())
    }

    /// Reads the 32-bit register at BAR offset `offset`, running cycles until the answer.
    pub fn try_read32(&mut self, offset: u32) -> Result<u32, HostError> {
        self.axil.begin_read(&self.sim, offset)?;
        self.finish_axil()
    }

    /// Writes the 32-bit register at BAR offset `offset`, running cycles until the response.
    pub fn try_write32(&mut self, offset: u32, value: u32) -> Result<(), HostError> {
        self.axil.begin_write(&mut self.sim, offset, value)?;
        self.finish_axil().map(|_| ())
    }

    fn finish_axil(&mut self) -> Result<u32, HostError> {
        loop {
            self.cycle()?;
            if let Some(outcome) = self.axil.take_done() {
                return Ok(outcome?);
            }
        }
    }

    /// Waits up to `timeout_ns` of simulated time for a vector in `mask`: returns the vectors
    /// that fired (clearing them) or 0 on timeout.
    pub fn try_wait(&mut self, mask: u64, timeout_ns: u64) -> Result<u64, HostError> {
        let budget = self.ns_to_cycles(timeout_ns);
        for _ in 0..budget {
            if self.irq.pending() & mask != 0 {
                break;
            }
            self.cycle()?;
        }
        Ok(self.irq.take(mask))
    }

    /// Cycles in `ns` nanoseconds at the configured clock, rounded up.
    pub fn ns_to_cycles(&self, ns: u64) -> u64 {
        (ns as f64 * self.config.clock_mhz / 1000.0).ceil() as u64
    }

    /// Simulated time so far, nanoseconds.
    pub fn elapsed_ns(&self) -> u64 {
        (self.sim.cycles() as f64 * 1000.0 / self.config.clock_mhz) as u64
    }

    /// Cycles run so far.
    pub fn cycles(&self) -> u64 {
        self.sim.cycles()
    }

    /// Adds an agent to the cycle loop (a stream driver, sink or monitor on a port the host
    /// contract does not cover). Its errors end [`cycle`](Self::cycle) with
    /// [`HostError::Stream`].
    pub fn add_agent<T: Agent + Send + 'static>(&mut self, agent: T) -> AgentId<T> {
        self.agents.push(Box::new(agent));
        AgentId {
            index: self.agents.len() - 1,
            _agent: PhantomData,
        }
    }

    /// The agent `id` names (`None` if `id` came from another host).
    pub fn agent<T: 'static>(&self, id: AgentId<T>) -> Option<&T> {
        self.agents.get(id.index)?.as_any().downcast_ref()
    }

    /// The agent `id` names, mutably (to queue frames, say).
    pub fn agent_mut<T: 'static>(&mut self, id: AgentId<T>) -> Option<&mut T> {
        self.agents.get_mut(id.index)?.as_any_mut().downcast_mut()
    }

    /// The simulated NIC (its ports, for a test that drives some by hand).
    pub fn sim(&self) -> &Sim {
        &self.sim
    }

    /// The simulated NIC, mutably: inputs set here before [`cycle`](Self::cycle) apply in it.
    pub fn sim_mut(&mut self) -> &mut Sim {
        &mut self.sim
    }

    /// Host memory.
    pub fn memory(&self) -> &HostMemory {
        &self.memory
    }

    /// Host memory, mutably.
    pub fn memory_mut(&mut self) -> &mut HostMemory {
        &mut self.memory
    }

    /// The DMA service (its counters, what is outstanding).
    pub fn dma(&self) -> &DmaService {
        &self.dma
    }

    /// The interrupt latch (pending vectors, message counts).
    pub fn irq(&self) -> &Irq {
        &self.irq
    }

    /// Gives the simulated NIC back.
    pub fn into_sim(self) -> Sim {
        self.sim
    }
}

/// Panics with a failure that a driver trait cannot report (see [`SimHost`]).
fn fail<T>(what: &str, r: Result<T, HostError>) -> T {
    r.unwrap_or_else(|e| panic!("simulated host, {what}: {e}"))
}

impl RegisterSpace for SimHost {
    fn read32(&mut self, offset: u32) -> u32 {
        fail("register read", self.try_read32(offset))
    }

    fn write32(&mut self, offset: u32, value: u32) {
        fail("register write", self.try_write32(offset, value))
    }
}

impl DmaMemory for SimHost {
    fn alloc(&mut self, len: usize, align: usize) -> Result<DmaRegion, DmaError> {
        use crate::memory::MemError;
        self.memory.alloc(len, align).map_err(|e| match e {
            MemError::OutOfMemory { len, .. } => DmaError::OutOfMemory { len },
            MemError::BadAlignment { align } => DmaError::BadAlignment { align },
            other => DmaError::Map(other.to_string()),
        })
    }

    fn free(&mut self, region: DmaRegion) {
        fail(
            "DMA free",
            self.memory.free(region).map_err(HostError::from),
        )
    }

    fn read(&mut self, addr: u64, buf: &mut [u8]) {
        fail(
            "DMA memory read",
            self.memory.read(addr, buf).map_err(HostError::from),
        )
    }

    fn write(&mut self, addr: u64, data: &[u8]) {
        fail(
            "DMA memory write",
            self.memory.write(addr, data).map_err(HostError::from),
        )
    }

    /// Nothing to order: the simulation is one thread, and a read request sees memory as it
    /// is when its answer starts.
    fn wmb(&mut self) {}
}

impl Interrupts for SimHost {
    fn vectors(&self) -> usize {
        self.irq.vectors()
    }

    fn wait(&mut self, mask: u64, timeout_ns: u64) -> u64 {
        fail("interrupt wait", self.try_wait(mask, timeout_ns))
    }

    fn relax(&mut self) {
        fail("relax", self.run(self.config.relax_cycles))
    }

    fn now_ns(&mut self) -> u64 {
        self.elapsed_ns()
    }
}
